import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fileRefFromCode, fileRefFromHref, splitFileRefs } from '../../webview-ui/src/fileLinks.ts';
import { markdownToHtml } from '../../webview-ui/src/markdownHtml.ts';

// Which parts of an answer are file references (the panel makes them links that open the file).

test('`path:line` in prose is found with its line and column; other colons are not', () => {
  assert.deepEqual(splitFileRefs('The bug is in src/greet.js:3, see also lib/a.test.ts:12:4.'), [
    'The bug is in ',
    { target: { path: 'src/greet.js', line: 3 }, text: 'src/greet.js:3' },
    ', see also ',
    { target: { path: 'lib/a.test.ts', line: 12, column: 4 }, text: 'lib/a.test.ts:12:4' },
    '.',
  ]);
  for (const prose of [
    'at 10:30 we met',
    'ratio 3:1',
    'http://localhost:8080/x',
    'Note: 3 items',
    'v1.2:3',
  ]) {
    assert.deepEqual(splitFileRefs(prose), [prose], prose);
  }
  assert.deepEqual(splitFileRefs('greet.js:3'), [
    { target: { path: 'greet.js', line: 3 }, text: 'greet.js:3' },
  ]);
});

test('code spans: a path with a line, or a path with a folder; not identifiers', () => {
  assert.deepEqual(fileRefFromCode('src/greet.js:3'), { path: 'src/greet.js', line: 3 });
  assert.deepEqual(fileRefFromCode('src/greet.js'), { path: 'src/greet.js' });
  assert.deepEqual(fileRefFromCode('./test/greet.test.js'), { path: './test/greet.test.js' });
  for (const code of ['console.log', 'greet.js', 'a/b', 'npm test', 'export function greet', 'x.y()']) {
    assert.equal(fileRefFromCode(code), undefined, code);
  }
});

test('Markdown link targets: relative and absolute paths, #L fragments and file: URLs; not web links', () => {
  assert.deepEqual(fileRefFromHref('src/greet.js#L3'), { path: 'src/greet.js', line: 3 });
  assert.deepEqual(fileRefFromHref('src/greet.js#L3-L5'), { path: 'src/greet.js', line: 3 });
  assert.deepEqual(fileRefFromHref('src/greet.js:3'), { path: 'src/greet.js', line: 3 });
  assert.deepEqual(fileRefFromHref('/w/src/greet.js'), { path: '/w/src/greet.js' });
  assert.deepEqual(fileRefFromHref('file:///w/src/my%20file.js#L7'), { path: '/w/src/my file.js', line: 7 });
  for (const href of [
    'https://example.com/a.js',
    '#section',
    '//evil.test/a.js',
    'javascript:alert(1)',
    'src/',
  ]) {
    assert.equal(fileRefFromHref(href), undefined, href);
  }
});

test('a Markdown link to a file is kept as a file reference; javascript: is not a link', () => {
  const html = markdownToHtml('[the greeting](src/greet.js#L3) and [x](javascript:alert(1))');
  assert.match(html, /<a class="file-ref" href="src\/greet\.js#L3">the greeting<\/a>/);
  assert.doesNotMatch(html, /href="javascript/);
});

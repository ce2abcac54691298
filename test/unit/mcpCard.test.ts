import assert from 'node:assert/strict';
import { test } from 'node:test';
import { keyArgument, toolDisplayName } from '../../webview-ui/src/format.ts';

// The panel's tool card for MCP calls: titled `server › tool`, with the call's first string argument.

test('an McpCall card is titled server › tool and shows the first string argument', () => {
  const input = { server: 'github', tool: 'create_issue', arguments: { count: 2, title: 'Crash on  save' } };
  assert.equal(toolDisplayName('McpCall', input), 'github › create_issue');
  assert.equal(keyArgument('McpCall', input), 'Crash on save');
  assert.equal(keyArgument('McpCall', { server: 'github', tool: 'list' }), '');
  assert.equal(toolDisplayName('McpCall', { server: 'github' }), 'McpCall');
  assert.equal(toolDisplayName('Read', { path: 'a' }), 'Read');
  assert.equal(keyArgument('McpSearch', { query: 'open issue', server: 'github' }), 'open issue');
});

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { userFacingError } from '../../webview-ui/src/format.ts';

// A tool error's suggestion is written for the model; the panel shows the user the part meant for them.

test('a denial card says "You denied …" and shows none of the instructions to the model', () => {
  const shown = userFacingError({
    code: 'DENIED_BY_USER',
    message: 'The user denied running: rm -r build',
    suggestion:
      'Do not retry this command or a variant of it. Use a dedicated tool if one fits, or explain to the user what you wanted to run and why.',
  });
  assert.deepEqual(shown, { label: 'Denied', message: 'You denied running: rm -r build' });
  for (const [message, want] of [
    ['The user declined the change to src/a.ts (outside the workspace).', /^You declined the change/],
    ['Not saved: the user did not approve this memory change.', /you did not approve/],
  ] as const) {
    const s = userFacingError({ code: 'DENIED_BY_USER', message, suggestion: 'Do not retry.' });
    assert.match(s.message, want);
    assert.equal(s.suggestion, undefined);
  }
});

test('other errors keep advice a user can act on, never advice addressed to the model', () => {
  assert.deepEqual(
    userFacingError({ code: 'NOT_FOUND', message: 'No such file: a.ts', suggestion: 'Check the path.' }),
    { label: 'NOT_FOUND', message: 'No such file: a.ts', suggestion: 'Check the path.' },
  );
  const blocked = userFacingError({
    code: 'BLOCKED_BY_POLICY',
    message: 'Blocked: sudo is never run.',
    suggestion:
      'Do not try to work around this block. If the task truly needs it, tell the user to run it themselves.',
  });
  assert.equal(blocked.label, 'Blocked');
  assert.equal(blocked.suggestion, undefined);
});

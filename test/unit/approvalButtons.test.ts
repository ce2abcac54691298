import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ApprovalRequest } from '../../src/agent/host.ts';
import { approvalItems, defaultsToDeny, enterSafeItems } from '../../src/extension/approvalButtons.ts';

// VS Code's modal focuses its first non-close button (Enter presses it); Escape and the X pick the
// close affordance. The E2E test checks that in the real dialog; this pins the order.

const request = (over: Partial<ApprovalRequest>): ApprovalRequest => ({
  kind: 'command',
  title: 'Command: npm install',
  detail: 'npm install',
  risk: 'medium',
  ...over,
});

test('a destructive, high-risk, delete or once-only request has "Deny" first: Enter does not approve it', () => {
  for (const r of [
    request({ kind: 'destructive', title: 'Destructive command: rm -r build', sessionKey: 'destructive:rm' }),
    request({ kind: 'delete' }),
    request({ risk: 'high' }),
    request({ once: true, risk: 'high' }),
  ]) {
    assert.equal(defaultsToDeny(r), true);
    const items = approvalItems(r);
    assert.deepEqual(items[0], { title: 'Deny' }, r.title);
    assert.ok(!items[0]!.isCloseAffordance, 'the default button is a real button, not the close affordance');
    assert.deepEqual(items.at(-1), { title: 'Cancel', isCloseAffordance: true });
    assert.equal(items.filter((i) => i.isCloseAffordance).length, 1);
  }
  assert.deepEqual(
    approvalItems(request({ once: true, risk: 'high' })).map((i) => i.title),
    ['Deny', 'Allow once', 'Cancel'],
    'once-only: no "for this session"',
  );
});

test('an ordinary request keeps "Allow once" first and its close affordance is labelled "Deny"', () => {
  const items = approvalItems(request({}));
  assert.equal(defaultsToDeny(request({})), false);
  assert.deepEqual(items, [
    { title: 'Allow once' },
    { title: 'Allow for this session' },
    { title: 'Deny', isCloseAffordance: true },
  ]);
});

test('approving what a repository supplies, or running a refused command unconfined, is never what Enter does', () => {
  const items = enterSafeItems('Approve', 'Not Now');
  assert.deepEqual(
    items.map((i) => i.title),
    ['Not Now', 'Approve', 'Cancel'],
  );
  assert.ok(!items[0]!.isCloseAffordance, 'the focused button is the harmless answer');
  assert.deepEqual(
    items.filter((i) => i.isCloseAffordance),
    [{ title: 'Cancel', isCloseAffordance: true }],
  );
});

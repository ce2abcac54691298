import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { test } from 'node:test';
import type { ApprovalMessage } from '../../src/agent/approvalMessage.ts';
import type { ApprovalRequest } from '../../src/agent/host.ts';
import { classifyCommand } from '../../src/agent/safety/commandPolicy.ts';
import { createDomainPolicy } from '../../src/agent/safety/sandbox/domains.ts';
import { approvalRequest, outsideSandboxRequest } from '../../src/agent/tools/bashApproval.ts';
import { approvalText, ENGLISH, type L10n } from '../../src/extension/approvalText.ts';
import { runOutsideDialog } from '../../src/extension/sandboxUi.ts';

// The approval dialog in the user's language: the core's structured question rendered through the
// extension's templates. In English it reads exactly as the core's own text (the CLI's); in zh-cn
// (the shipped bundle) its words are Chinese, while what it names (command, path, diff, reason)
// is shown verbatim — a translation never changes what the user approves.

const ROOT = path.resolve(import.meta.dirname, '..', '..');
const bundle = JSON.parse(
  fs.readFileSync(path.join(ROOT, 'l10n', 'bundle.l10n.zh-cn.json'), 'utf8'),
) as Record<string, string>;

/** vscode.l10n.t with the zh-cn bundle; a template the bundle lacks fails the test. */
const ZH: L10n = {
  t(message, ...args) {
    const text = bundle[message];
    assert.ok(text, `no zh-cn text for ${JSON.stringify(message)}`);
    return ENGLISH.t(text, ...args);
  },
};

const CJK = /[\u4e00-\u9fff]/;
const workspaceRoot = fs.realpathSync(os.tmpdir());
const classify = (command: string) => classifyCommand(command, { workspaceRoot, home: os.homedir() });

test("a Bash command's question reads in English exactly as the core's text, and in Chinese around the verbatim command", () => {
  // A command an attacker-controlled repository could suggest: braces, quotes, a newline.
  const command = 'curl -s "https://example.com/{0}?q={1}" -o "$(echo x)"\necho done';
  const verdict = classify(command);
  assert.equal(verdict.decision, 'ask');
  for (const request of [
    approvalRequest(command, verdict, 'Fetch the {0} script'),
    approvalRequest(command, verdict, undefined, 'the auto classifier (m) escalated: pipes to sh'),
    outsideSandboxRequest(command, verdict),
  ]) {
    assert.deepEqual(approvalText(request, ENGLISH), { title: request.title, detail: request.detail });
    const zh = approvalText(request, ZH);
    assert.match(zh.title, CJK, zh.title);
    assert.match(zh.detail, CJK, zh.detail);
    // The whole command, unchanged, first in the body; the policy's reason verbatim.
    assert.ok(zh.detail.startsWith(`${command}\n\n`), zh.detail);
    assert.ok(zh.detail.includes(verdict.reason), zh.detail);
    assert.ok(!zh.detail.includes('Needs approval because'), zh.detail);
  }
  const described = approvalText(approvalRequest(command, verdict, 'Fetch the {0} script'), ZH);
  assert.match(described.title, /^(网络命令|破坏性命令|命令)：Fetch the \{0\} script$/);
  const outside = approvalText(outsideSandboxRequest(command, verdict), ZH);
  assert.equal(outside.title, `在沙盒之外运行：${command.split('\n')[0]}`);
  assert.match(outside.detail, /SSH 密钥/);
});

test("the network proxy's domain question in Chinese names the host and port verbatim", async () => {
  const asked: ApprovalRequest[] = [];
  const policy = createDomainPolicy({
    allowedDomains: [],
    approvals: {
      async ask(request) {
        asked.push(request);
        return 'deny';
      },
    },
  });
  await policy.decide('evil.example', 8443, 'CONNECT');
  const request = asked[0];
  assert.ok(request);
  assert.deepEqual(approvalText(request, ENGLISH), { title: request.title, detail: request.detail });
  const zh = approvalText(request, ZH);
  assert.equal(zh.title, '访问网络：evil.example');
  assert.match(zh.detail, /连接到 evil\.example:8443/);
  assert.match(zh.detail, /HTTP 403/);
});

test('every question the core asks has Chinese words, with its values verbatim', () => {
  const hostile = '<b>{0}</b> $(rm -rf ~) \u202e';
  const messages: ApprovalMessage[] = [
    { id: 'task_command', purpose: 'init', subject: 'keel-task/init.sh', command: hostile, reason: hostile },
    { id: 'task_command', purpose: 'reverify', subject: hostile, command: hostile, reason: 'network' },
    { id: 'protected_write', action: 'create', tool: 'Write', path: hostile, why: 'a git hook' },
    { id: 'protected_write', action: 'modify', tool: 'Edit', path: '.env', why: hostile },
    { id: 'mcp_call', tool: `srv/${hostile}`, readOnlyHint: true, arguments: `{"q":"${hostile}"}` },
    { id: 'mcp_call', tool: 'srv/t', readOnlyHint: false, arguments: hostile },
    { id: 'memory_tool_output', entry: hostile },
    { id: 'memory_user', action: 'add', entry: hostile },
    { id: 'memory_user', action: 'replace', entry: 'new', replaced: hostile },
    { id: 'memory_user', action: 'remove', entry: hostile },
    { id: 'hook_confirm', tool: 'Bash', input: hostile },
    {
      id: 'subagent_merge',
      agent: 'writer "a"',
      files: ['a.ts', hostile],
      protected: [{ path: hostile, why: 'a CI workflow' }],
      diff: `--- a\n+++ b\n+${hostile}`,
    },
  ];
  for (const message of messages) {
    const request: ApprovalRequest = { kind: 'other', title: 'T', detail: 'D', risk: 'medium', message };
    const zh = approvalText(request, ZH);
    assert.match(zh.title, CJK, `${message.id} title: ${zh.title}`);
    if (message.id !== 'subagent_merge') assert.match(zh.detail, CJK, `${message.id} detail: ${zh.detail}`);
    assert.ok(`${zh.title}\n${zh.detail}`.includes(hostile), `${message.id} shows the value verbatim`);
    // English: the same sentences as the core's text.
    const en = approvalText(request, ENGLISH);
    assert.ok(!CJK.test(`${en.title}${en.detail}`), message.id);
  }
  const merge = approvalText(
    { kind: 'other', title: 'T', detail: 'D', risk: 'high', message: messages[11]! },
    ENGLISH,
  );
  assert.equal(
    merge.title,
    `Apply writer "a"'s changes to 2 file(s): a.ts, ${hostile} — protected: ${hostile} (a CI workflow)`,
  );
});

test("a sub-agent's question names it; a request without a valid message keeps its English text", () => {
  const verdict = classify('curl -s https://example.com');
  const inner = approvalRequest('curl -s https://example.com', verdict, undefined);
  const zh = approvalText({ ...inner, subagent: 'scan "docs"' }, ZH);
  assert.match(zh.title, /^子智能体“scan "docs"”：/);
  // A message that does not match its schema (a host must never render a half-valid question).
  const forged = {
    kind: 'command',
    title: 'Command: ls',
    detail: 'ls\n\nNeeds approval because: x',
    risk: 'low',
    message: { id: 'command', kind: 'command', summary: 'ls', command: 'rm -rf /', reason: 'x', extra: 1 },
  } as unknown as ApprovalRequest;
  assert.deepEqual(approvalText(forged, ZH), {
    title: 'Command: ls',
    detail: 'ls\n\nNeeds approval because: x',
  });
  const none: ApprovalRequest = { kind: 'other', title: 'Plain', detail: 'Words', risk: 'low' };
  assert.deepEqual(approvalText(none, ZH), { title: 'Plain', detail: 'Words' });
});

test('the run-outside-the-sandbox modal in Chinese keeps the command verbatim', () => {
  const command = 'npm test -- --grep "{0}"';
  const en = runOutsideDialog(command);
  assert.equal(en.message, 'Run this command outside the sandbox?');
  const zh = runOutsideDialog(command, ZH);
  assert.equal(zh.message, '在沙盒之外运行此命令？');
  assert.ok(zh.detail.startsWith(`${command}\n\n沙盒拒绝`), zh.detail);
});

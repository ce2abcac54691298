import { approvalMessageSchema } from '../agent/approvalMessage.ts';
import type { ApprovalRequest } from '../agent/host.ts';

// An approval question's title and detail in the user's language (approvals.ts shows them). The core
// sends each question in a structured form (agent/approvalMessage.ts) next to its English text; here
// each one has its English templates, translated through vscode.l10n (l10n/bundle.l10n.*.json). What
// the question names (a command, a path, a diff, a reason) is an argument, put in verbatim: a
// translation never changes what the user approves. No vscode runtime import: unit-tested with the
// bundle. A request without a message, or one that does not parse, is shown in its English text.

/** vscode.l10n's `t`: the English template in the display language, `{0}`… replaced by `args`. */
export interface L10n {
  t(message: string, ...args: Array<string | number | boolean>): string;
}

/** The English text itself (what vscode.l10n.t gives without a bundle): for callers and tests. */
export const ENGLISH: L10n = {
  t: (message, ...args) =>
    message.replace(/\{(\d+)\}/g, (m, i: string) =>
      args[Number(i)] === undefined ? m : String(args[Number(i)]),
    ),
};

export interface ApprovalText {
  readonly title: string;
  readonly detail: string;
}

const paragraphs = (...parts: (string | false | undefined)[]) =>
  parts.filter((p): p is string => typeof p === 'string').join('\n\n');

function messageText(request: ApprovalRequest, l10n: L10n): ApprovalText | undefined {
  const parsed = approvalMessageSchema.safeParse(request.message);
  if (!parsed.success) return undefined;
  const m = parsed.data;
  switch (m.id) {
    case 'command':
      return {
        title:
          m.kind === 'network'
            ? l10n.t('Network command: {0}', m.summary)
            : m.kind === 'destructive'
              ? l10n.t('Destructive command: {0}', m.summary)
              : l10n.t('Command: {0}', m.summary),
        detail: paragraphs(
          m.command,
          l10n.t('Needs approval because: {0}', m.reason),
          m.escalated !== undefined && l10n.t('Asked because {0}', m.escalated),
        ),
      };
    case 'outside_sandbox':
      return {
        title: l10n.t('Run OUTSIDE the sandbox: {0}', m.command.split('\n')[0]?.slice(0, 80) ?? ''),
        detail: paragraphs(
          m.command,
          l10n.t(
            'The agent asks to run this one command without the OS sandbox. Unconfined, it can write anywhere you can, read your SSH keys and other secrets, use the network and local sockets.',
          ),
          m.policyReason !== undefined && l10n.t('The command policy also flags it: {0}', m.policyReason),
        ),
      };
    case 'task_command':
      return {
        title:
          m.purpose === 'init'
            ? l10n.t('Run {0} (long task setup)', m.subject)
            : l10n.t('Re-verify {0} (long task)', m.subject),
        detail: paragraphs(m.command, l10n.t('Needs approval because: {0}', m.reason)),
      };
    case 'protected_write':
      return m.action === 'create'
        ? {
            title: l10n.t('Create {0}', m.path),
            detail: l10n.t('{0} wants to create {1}, which is {2}.', m.tool, m.path, m.why),
          }
        : {
            title: l10n.t('Modify {0}', m.path),
            detail: l10n.t('{0} wants to change {1}, which is {2}.', m.tool, m.path, m.why),
          };
    case 'mcp_call':
      return {
        title: l10n.t('Call MCP tool {0}', m.tool),
        detail: `${m.readOnlyHint ? l10n.t('{0} (the server marks it read-only)', m.tool) : m.tool}\n${l10n.t('arguments: {0}', m.arguments)}`,
      };
    case 'memory_tool_output':
      return {
        title: l10n.t('Save tool output to memory'),
        detail: `${l10n.t("The agent wants to save text that came from a tool result (file, command or web) to this workspace's memory (.keel/memory/MEMORY.md):")}\n${m.entry}`,
      };
    case 'memory_user': {
      const intro =
        m.action === 'add'
          ? l10n.t(
              'The agent wants to add an entry in ~/.keel/MEMORY.md, which is in the system prompt of every session in every workspace:',
            )
          : m.action === 'replace'
            ? l10n.t(
                'The agent wants to replace an entry of ~/.keel/MEMORY.md, which is in the system prompt of every session in every workspace:',
              )
            : l10n.t(
                'The agent wants to remove an entry of ~/.keel/MEMORY.md, which is in the system prompt of every session in every workspace:',
              );
      return {
        title:
          m.action === 'remove'
            ? l10n.t('Remove from your memory (all projects)')
            : l10n.t('Save to your memory (all projects)'),
        detail: `${intro}\n${m.entry}${m.replaced !== undefined ? `\n${l10n.t('(replacing: {0})', m.replaced)}` : ''}`,
      };
    }
    case 'subagent_merge': {
      const guarded = m.protected.map((p) => `${p.path} (${p.why})`).join(', ');
      return {
        title: `${l10n.t("Apply {0}'s changes to {1} file(s): {2}", m.agent, m.files.length, m.files.join(', '))}${guarded ? l10n.t(' — protected: {0}', guarded) : ''}`,
        detail: m.diff,
      };
    }
    case 'hook_confirm':
      return {
        title: l10n.t('Hook asks: allow {0}?', m.tool),
        detail: paragraphs(
          `${m.tool} ${m.input}`,
          l10n.t('A PreToolUse hook asks you to confirm this call.'),
        ),
      };
    case 'network_domain':
      return {
        title: l10n.t('Network access to {0}', m.host),
        detail: paragraphs(
          l10n.t(
            "A sandboxed command wants to connect to {0}:{1} through Keel's network proxy; {0} is not on the allowed domains (keel.sandbox.allowedDomains).",
            m.host,
            m.port,
          ),
          l10n.t(
            "Allow once: {0} for the next minute. Allow for this session: always, for this workspace (saved outside the workspace, in Keel's folder of your home). Deny: the command gets HTTP 403.",
            m.host,
          ),
        ),
      };
  }
}

/** The request's title and detail in the display language (English: the core's own text). */
export function approvalText(request: ApprovalRequest, l10n: L10n): ApprovalText {
  const text = messageText(request, l10n);
  if (!text) return { title: request.title, detail: request.detail };
  return request.subagent === undefined
    ? text
    : { ...text, title: l10n.t('Sub-agent "{0}": {1}', request.subagent, text.title) };
}

import type { WebviewString } from '../../src/shared/webviewStrings.ts';
import { t } from './l10n.ts';

// Pure formatting helpers shared by the reducer and the renderer.

const EDIT_TOOLS = new Set(['Edit', 'MultiEdit', 'Write']);

function field(input: unknown, ...keys: string[]): string | undefined {
  if (typeof input !== 'object' || input === null) return undefined;
  const record = input as Record<string, unknown>;
  for (const key of keys) {
    const value = record[key];
    if (typeof value === 'string' && value.length > 0) return value;
  }
  return undefined;
}

export function isEditTool(name: string): boolean {
  return EDIT_TOOLS.has(name);
}

/** The file an edit tool call targets, if any. */
export function editPath(name: string, input: unknown): string | undefined {
  return isEditTool(name) ? field(input, 'path', 'file_path', 'filePath') : undefined;
}

/** The card's title: the tool's name, or `server › tool` for an MCP call. */
export function toolDisplayName(name: string, input: unknown): string {
  if (name !== 'McpCall') return name;
  const server = field(input, 'server');
  const tool = field(input, 'tool');
  return server && tool ? `${server} › ${tool}` : name;
}

/** The one argument that says what a tool call is about (shown on the collapsed card). */
export function keyArgument(name: string, input: unknown): string {
  let value: string | undefined;
  switch (name) {
    case 'Bash':
      value = field(input, 'command');
      break;
    case 'Grep':
    case 'Glob':
      value = field(input, 'pattern', 'query');
      break;
    case 'TodoWrite': {
      const todos =
        typeof input === 'object' && input !== null ? (input as Record<string, unknown>)['todos'] : undefined;
      value = Array.isArray(todos) ? `${todos.length} item${todos.length === 1 ? '' : 's'}` : undefined;
      break;
    }
    case 'Skill':
      value = field(input, 'name', 'skill');
      break;
    case 'MemorySearch':
    case 'McpSearch':
      value = field(input, 'query');
      break;
    case 'McpCall': {
      const args =
        typeof input === 'object' && input !== null
          ? (input as Record<string, unknown>)['arguments']
          : undefined;
      value =
        typeof args === 'object' && args !== null
          ? Object.values(args as Record<string, unknown>).find((v): v is string => typeof v === 'string')
          : undefined;
      value ??= '';
      break;
    }
    case 'Task':
      value = field(input, 'description', 'prompt');
      break;
    case 'Job':
      value = field(input, 'action') && `${field(input, 'action')} ${field(input, 'id') ?? ''}`;
      break;
    default:
      value = field(input, 'path', 'file_path', 'filePath');
  }
  if (value === undefined && typeof input === 'object' && input !== null) {
    value = Object.values(input as Record<string, unknown>).find((v): v is string => typeof v === 'string');
  }
  const oneLine = (value ?? '').replace(/\s+/g, ' ').trim();
  return oneLine.length > 120 ? `${oneLine.slice(0, 119)}…` : oneLine;
}

export function formatDuration(ms: number | undefined): string {
  if (ms === undefined || !Number.isFinite(ms)) return '';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const minutes = Math.floor(ms / 60_000);
  return `${minutes} m ${Math.round((ms % 60_000) / 1000)} s`;
}

export function formatTokens(n: number): string {
  if (n < 1000) return String(Math.round(n));
  if (n < 1_000_000) return `${(n / 1000).toFixed(n < 10_000 ? 1 : 0)}K`;
  return `${(n / 1_000_000).toFixed(1)}M`;
}

export function formatCost(usd: number): string {
  if (usd === 0) return '$0.00';
  if (usd < 0.01) return '<$0.01';
  return `$${usd.toFixed(2)}`;
}

/** Percent of the context window in use, clamped to 0..100. */
export function contextPercent(tokens: number, window: number): number {
  if (window <= 0) return 0;
  return Math.max(0, Math.min(100, Math.round((tokens / window) * 100)));
}

const TOOL_ICONS: Record<string, string> = {
  Read: 'file',
  Write: 'new-file',
  Edit: 'edit',
  MultiEdit: 'edit',
  Bash: 'terminal',
  Grep: 'search',
  Glob: 'files',
  LS: 'folder',
  TodoWrite: 'checklist',
  Skill: 'book',
  MemorySearch: 'history',
  Task: 'rocket',
};

export function toolIcon(name: string): string {
  return TOOL_ICONS[name] ?? 'tools';
}

export interface DiffLine {
  readonly kind: 'add' | 'del' | 'ctx' | 'hunk' | 'meta';
  readonly text: string;
}

/** Classify unified-diff lines for display. */
export function parseUnifiedDiff(diff: string): DiffLine[] {
  const lines = diff.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  return lines.map((text): DiffLine => {
    if (text.startsWith('@@')) return { kind: 'hunk', text };
    if (
      text.startsWith('+++') ||
      text.startsWith('---') ||
      text.startsWith('Index:') ||
      text.startsWith('===')
    ) {
      return { kind: 'meta', text };
    }
    if (text.startsWith('+')) return { kind: 'add', text };
    if (text.startsWith('-')) return { kind: 'del', text };
    if (text.startsWith('\\')) return { kind: 'meta', text };
    return { kind: 'ctx', text };
  });
}

/** Normalise a path for comparison between tool inputs (maybe absolute) and review paths (relative). */
export function samePath(a: string, b: string): boolean {
  const norm = (p: string) => p.replace(/\\/g, '/').replace(/^\.\//, '').replace(/\/+$/, '');
  const x = norm(a);
  const y = norm(b);
  return x === y || x.endsWith(`/${y}`) || y.endsWith(`/${x}`);
}

/** Lines removed and added between two versions of a small file (MEMORY.md), in file order. */
export function lineChanges(
  before: string | null,
  after: string | null,
): Array<{ sign: '+' | '-'; text: string }> {
  const a = (before ?? '').split('\n').filter((l) => l.trim());
  const b = (after ?? '').split('\n').filter((l) => l.trim());
  const inA = new Set(a);
  const inB = new Set(b);
  return [
    ...a.filter((l) => !inB.has(l)).map((text) => ({ sign: '-' as const, text })),
    ...b.filter((l) => !inA.has(l)).map((text) => ({ sign: '+' as const, text })),
  ];
}

/** What the panel shows of a tool error: the card is read by the user, the suggestion is the model's. */
export interface UserFacingError {
  /** Short label instead of the machine code, when there is a friendlier one. */
  readonly label: string;
  readonly message: string;
  /** Only advice meant for the user; instructions to the model ("Do not retry…") are left out. */
  readonly suggestion?: string;
}

const ERROR_LABELS: Record<string, WebviewString> = {
  DENIED_BY_USER: 'Denied',
  BLOCKED_BY_POLICY: 'Blocked',
};

/**
 * A denial as the tools word it for the model (safety/approvals.ts `refusal`, the edit gate, the
 * memory tool), said to the user in their language; what was denied stays verbatim.
 */
function deniedText(message: string): string {
  let m = /^The user denied running: ([\s\S]*)\.$/.exec(message);
  if (m) return t('You denied running: {0}.', m[1]!);
  m = /^The user declined the change to ([\s\S]*)\.$/.exec(message);
  if (m) return t('You declined the change to {0}.', m[1]!);
  m = /^The user denied ([\s\S]*)\.$/.exec(message);
  if (m) return t('You denied {0}.', m[1]!);
  if (message === 'Not saved: the user did not approve this memory change.')
    return t('Not saved: you did not approve this memory change.');
  // Anything else: the English, in the second person.
  return message
    .replace(/^The user (denied|declined)\b/, 'You $1')
    .replace(/\bthe user did not approve\b/, 'you did not approve');
}

/** Advice written for the model: it talks about "the user", or tells the agent what (not) to do next. */
const MODEL_FACING = /\b(the user|do not retry|do not try|don't retry|ask the user|tell the user)\b/i;

export function userFacingError(error: {
  readonly code: string;
  readonly message: string;
  readonly suggestion?: string;
}): UserFacingError {
  const known = ERROR_LABELS[error.code];
  const label = known ? t(known) : error.code;
  // Said to the model in the third person ("The user denied running: rm -r build"); to the user, "you".
  const message = error.code === 'DENIED_BY_USER' ? deniedText(error.message) : error.message;
  const suggestion = error.suggestion?.trim();
  const keep = suggestion && error.code !== 'DENIED_BY_USER' && !MODEL_FACING.test(suggestion);
  return { label, message, ...(keep ? { suggestion } : {}) };
}

import type { DiagnosticsWatch, Problem } from '../../host.ts';
import type { ToolContext, ToolResult } from '../protocol.ts';
import type { Target } from './apply.ts';

// Diagnostics after an edit: what the language servers report for the edited file that was not
// there before the write. Only the difference goes into the tool result (the model fixes what it
// broke, not the file's old warnings), capped, and only into the tool result: never the prefix (P1).

/** At most this many problem lines in a result; the rest are counted. */
export const MAX_PROBLEM_LINES = 10;
/** A message longer than this is cut (some servers explain a type mismatch over 30 lines). */
const MAX_MESSAGE_CHARS = 300;

export interface ProblemDelta {
  readonly introduced: readonly Problem[];
  /** Baseline problems no longer reported. */
  readonly fixed: number;
}

const identity = (p: Problem) =>
  `${p.severity}\u0000${p.source ?? ''}\u0000${p.code ?? ''}\u0000${p.message}`;
const at = (p: Problem) => `${p.line}:${p.column}\u0000${identity(p)}`;

/**
 * New = reported now but not before. Matched first by position and identity, then by identity
 * alone: an edit above an old problem moves it down, and a moved problem is not a new one.
 */
export function compareProblems(baseline: readonly Problem[], after: readonly Problem[]): ProblemDelta {
  const left = new Map<string, number>();
  const bump = (map: Map<string, number>, key: string, by: number) => map.set(key, (map.get(key) ?? 0) + by);
  for (const p of baseline) bump(left, at(p), 1);
  const unmatched: Problem[] = [];
  for (const p of after) {
    const n = left.get(at(p)) ?? 0;
    if (n > 0) left.set(at(p), n - 1);
    else unmatched.push(p);
  }
  const moved = new Map<string, number>();
  for (const p of baseline) {
    if ((left.get(at(p)) ?? 0) > 0) {
      bump(left, at(p), -1);
      bump(moved, identity(p), 1);
    }
  }
  const introduced: Problem[] = [];
  for (const p of unmatched) {
    const n = moved.get(identity(p)) ?? 0;
    if (n > 0) moved.set(identity(p), n - 1);
    else introduced.push(p);
  }
  let fixed = 0;
  for (const n of moved.values()) fixed += n;
  return { introduced, fixed };
}

function oneLine(message: string): string {
  const flat = message.replace(/\s*\n\s*/g, ' ').trim();
  return flat.length > MAX_MESSAGE_CHARS ? `${flat.slice(0, MAX_MESSAGE_CHARS - 1)}…` : flat;
}

/** `path:line:col severity message [source code]`, errors first, then by position. */
export function formatProblem(display: string, p: Problem): string {
  const origin = [p.source, p.code].filter((x) => x !== undefined && x !== '').join(' ');
  return `${display}:${p.line}:${p.column} ${p.severity} ${oneLine(p.message)}${origin ? ` [${origin}]` : ''}`;
}

/** The text appended to the edit's result; '' when the edit introduced nothing and fixed nothing. */
export function formatDelta(display: string, delta: ProblemDelta, cap = MAX_PROBLEM_LINES): string {
  const lines: string[] = [];
  if (delta.introduced.length > 0) {
    const sorted = [...delta.introduced].sort(
      (a, b) =>
        (a.severity === b.severity ? 0 : a.severity === 'error' ? -1 : 1) ||
        a.line - b.line ||
        a.column - b.column,
    );
    lines.push('New problems introduced by this edit:');
    for (const p of sorted.slice(0, cap)) lines.push(formatProblem(display, p));
    if (sorted.length > cap) lines.push(`… and ${sorted.length - cap} more`);
  }
  if (delta.fixed > 0) lines.push(`Problems fixed by this edit: ${delta.fixed}.`);
  return lines.join('\n');
}

export type ResultFinisher = <D>(result: ToolResult<D>) => Promise<ToolResult<D>>;

const asIs: ResultFinisher = async (result) => result;

/** Started by commit() right before the write; `finish` waits for the servers and amends the result. */
export function watchProblems(ctx: ToolContext, target: Target): { finish: ResultFinisher; dispose(): void } {
  let watch: DiagnosticsWatch | undefined;
  try {
    watch = ctx.host.diagnostics?.begin(target.canonical);
  } catch (error) {
    // Diagnostics are a help, never a reason for an edit to fail.
    ctx.host.log?.('warn', `diagnostics unavailable for ${target.display}: ${String(error)}`);
  }
  if (!watch) return { finish: asIs, dispose: () => undefined };
  const w = watch;
  return {
    dispose: () => w.dispose(),
    finish: async (result) => {
      if (result.status === 'error') {
        w.dispose();
        return result;
      }
      let after: readonly Problem[];
      try {
        after = await w.settle(ctx.signal);
      } catch (error) {
        ctx.host.log?.('warn', `diagnostics for ${target.display} failed: ${String(error)}`);
        return result;
      }
      const delta = compareProblems(w.baseline, after);
      const note = formatDelta(target.display, delta);
      if (!note) return result;
      return {
        ...result,
        text: `${result.text}\n\n${note}`,
        stats: { ...result.stats, new_problems: delta.introduced.length, fixed_problems: delta.fixed },
      };
    },
  };
}

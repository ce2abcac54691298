import * as path from 'node:path';
import type { CommandClass, Finding, PolicyDecision, Risk } from './rules/commandTypes.ts';
import { parseShell } from './shell/shellParse.ts';
import { analyseCommand, defaultIsFile } from './shell/shellWalk.ts';

// The command policy (Bash is the fallback, never the main road). The command is parsed with a real
// shell parser; every simple command — in pipelines, lists, subshells, substitutions, functions,
// nested `sh -c` / eval strings — is classified, and the most severe finding decides:
// block > refuse > ask > allow. The decision is code, not model judgement.

export type { CommandClass, Finding, PolicyDecision, Risk } from './rules/commandTypes.ts';

export interface CommandVerdict {
  readonly decision: PolicyDecision;
  readonly class: CommandClass;
  readonly reason: string;
  readonly suggestion?: string;
  /** For "allow for this session": present only when every reason to ask is low/medium risk. */
  readonly sessionKey?: string;
  readonly risk: Risk;
  /** Which approval dialog fits ('command' | 'network' | 'destructive'), when decision is 'ask'. */
  readonly approvalKind?: 'command' | 'network' | 'destructive';
  readonly findings: readonly Finding[];
}

export interface ClassifyOptions {
  readonly workspaceRoot: string;
  readonly home: string;
  /** Is there a regular file here? Defaults to the real filesystem. */
  readonly isFile?: (absolutePath: string) => boolean;
  /**
   * The command will run inside the OS sandbox: findings that only guess at the file-system
   * effects of ordinary programs (paths outside the workspace, computed paths) do not ask.
   */
  readonly sandboxed?: boolean;
}

const MAX_COMMAND_BYTES = 100_000;

// ---------- verdict ----------

const SEVERITY: Record<PolicyDecision, number> = { allow: 0, ask: 1, refuse: 2, block: 3 };
const RISK_RANK: Record<Risk, number> = { low: 0, medium: 1, high: 2 };

function worst(findings: readonly Finding[]): Finding | undefined {
  let best: Finding | undefined;
  for (const f of findings) {
    if (
      !best ||
      SEVERITY[f.decision] > SEVERITY[best.decision] ||
      (SEVERITY[f.decision] === SEVERITY[best.decision] && RISK_RANK[f.risk] > RISK_RANK[best.risk])
    ) {
      best = f;
    }
  }
  return best;
}

function unique(items: readonly string[]): string[] {
  return [...new Set(items)];
}

export function verdictFrom(findings: readonly Finding[]): CommandVerdict {
  const top = worst(findings);
  if (!top || top.decision === 'allow') {
    return {
      decision: 'allow',
      class: 'safe',
      risk: 'low',
      reason: 'ordinary development command',
      findings,
    };
  }
  const peers = findings.filter((f) => f.decision === top.decision);
  if (top.decision !== 'ask') {
    const suggestion = peers.find((f) => f.suggestion)?.suggestion;
    return {
      decision: top.decision,
      class: top.class,
      risk: top.risk,
      reason: unique(peers.map((f) => f.reason)).join('; '),
      ...(suggestion ? { suggestion } : {}),
      findings,
    };
  }
  const keys = peers.map((f) =>
    f.risk === 'high' ? undefined : (f.sessionKey ?? `${f.class}:${f.program}`),
  );
  const sessionKey = keys.every((k) => k !== undefined)
    ? unique(keys as string[])
        .sort()
        .join('+')
    : undefined;
  const classes = new Set(peers.map((f) => f.class));
  const approvalKind = classes.has('destructive')
    ? 'destructive'
    : classes.has('network')
      ? 'network'
      : 'command';
  const suggestion = peers.find((f) => f.suggestion)?.suggestion;
  return {
    decision: 'ask',
    class: top.class,
    risk: top.risk,
    reason: unique(peers.map((f) => f.reason)).join('; '),
    ...(suggestion ? { suggestion } : {}),
    ...(sessionKey ? { sessionKey } : {}),
    approvalKind,
    findings,
  };
}

/** Classifies a shell command line. Pure apart from looking at which files exist. */
export function classifyCommand(command: string, options: ClassifyOptions): CommandVerdict {
  const opts = {
    workspaceRoot: path.resolve(options.workspaceRoot),
    home: path.resolve(options.home),
    isFile: options.isFile ?? defaultIsFile,
  };
  const refuse = (reason: string, suggestion: string): CommandVerdict => ({
    decision: 'refuse',
    class: 'unknown',
    risk: 'low',
    reason,
    suggestion,
    findings: [],
  });
  if (command.trim() === '') return refuse('the command is empty', 'Pass the command to run.');
  if (Buffer.byteLength(command) > MAX_COMMAND_BYTES) {
    return refuse('the command is too long to check', 'Write the script to a file with Write, then run it.');
  }
  if (command.includes('\0')) {
    // A NUL cannot reach bash intact; what would run is not what was checked.
    return refuse('the command contains a NUL byte', 'Remove the NUL character from the command.');
  }
  const parsed = parseShell(command);
  if (!parsed.ok) {
    return refuse(
      `the command does not parse as shell: ${parsed.error}`,
      'Fix the quoting/syntax; a command that cannot be parsed is not run.',
    );
  }
  let findings: Finding[];
  try {
    findings = analyseCommand(command, opts);
  } catch (error) {
    // A command the analysis cannot handle is not run.
    return refuse(
      `the command could not be analysed (${String(error).slice(0, 200)})`,
      'Simplify the command, or split it into steps.',
    );
  }
  if (options.sandboxed)
    findings = findings.map((f) =>
      f.confinable && f.decision === 'ask' ? { ...f, decision: 'allow' as const, class: 'safe' as const } : f,
    );
  return verdictFrom(findings);
}

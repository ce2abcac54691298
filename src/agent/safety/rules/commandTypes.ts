import type { ShNode } from '../shell/shellParse.ts';

// Shared vocabulary of the command policy: classes, findings, the per-command rule context, and a
// small getopt so each rule reads its flags the way the real program would.

export type CommandClass =
  | 'safe'
  | 'use_tool'
  | 'interactive'
  | 'network'
  | 'destructive'
  | 'never'
  | 'unknown';
export type PolicyDecision = 'allow' | 'ask' | 'refuse' | 'block';
export type Risk = 'low' | 'medium' | 'high';

export const DECISION_OF: Readonly<Record<CommandClass, PolicyDecision>> = {
  safe: 'allow',
  use_tool: 'refuse',
  interactive: 'refuse',
  network: 'ask',
  destructive: 'ask',
  unknown: 'ask',
  never: 'block',
};

export interface Finding {
  readonly decision: PolicyDecision;
  readonly class: CommandClass;
  readonly risk: Risk;
  readonly reason: string;
  /** The program the finding is about ("rm", "git push", "<dynamic>"). */
  readonly program: string;
  /** The simple command (source text) it was found in. */
  readonly command: string;
  readonly suggestion?: string;
  /** Approval granted "for this session" covers later commands with the same key. */
  readonly sessionKey?: string;
  /** The command downloads or receives data from the network (for `curl … | sh`). */
  readonly fetches?: boolean;
  /**
   * Only a guess at where an ordinary program reads or writes: the OS sandbox confines exactly
   * that, so inside it this finding does not ask.
   */
  readonly confinable?: boolean;
}

export type FindingInput = Omit<Finding, 'decision' | 'command'> & { readonly command?: string };

/** One argument after expansion. */
export interface Arg {
  readonly value: string;
  readonly exact: boolean;
  readonly glob: boolean;
  readonly substs: readonly ShNode[];
  /** Stands for brace alternatives beyond the checked ones. */
  readonly truncated?: boolean;
}

export interface StdinInfo {
  /** none: nothing (stdin is closed when Keel runs a command). */
  readonly kind: 'none' | 'pipe' | 'heredoc' | 'file';
  /** Statically known content (here-doc, `echo … |`). */
  readonly content?: string;
  /** Fed by a command that fetches from the network. */
  readonly network: boolean;
  /** The file stdin reads (`sh < x.sh`, `cat x.sh | sh`), when known. */
  readonly path?: string;
}

export const NO_STDIN: StdinInfo = { kind: 'none', network: false };

/** A file written earlier in the same command line. */
export interface Written {
  /** Its text, when statically known (`echo 'rm -rf /' > x.sh`). */
  readonly content?: string;
  /** A copy of or link to this program (`ln -s /bin/rm x`, `cp /bin/rm x`). */
  readonly program?: string;
  /** A symbolic link to this absolute path (`ln -s ~ h; rm -rf h/`). */
  readonly link?: string;
}

export interface NestedOptions {
  readonly positional?: readonly string[];
  readonly vars?: ReadonlyMap<string, string | undefined>;
  readonly stdin?: StdinInfo;
  readonly cwd?: string;
  /** Why the script is being analysed ("bash -c", "eval", "alias"), for reasons. */
  readonly via: string;
  /** Only what is dangerous counts (a $PAGER value: `less` is fine there, `rm -rf /` is not). */
  readonly quiet?: boolean;
  /** Only findings of the never class count (package scripts read from disk: judged, not re-asked). */
  readonly onlyNever?: boolean;
  /** eval / source: the script runs in the current shell, so its assignments and `cd` persist. */
  readonly sameShell?: boolean;
}

export interface RuleContext {
  readonly workspaceRoot: string;
  readonly home: string;
  /** Undefined after a `cd` we could not follow. */
  readonly cwd: string | undefined;
  readonly stdin: StdinInfo;
  /** stdout is redirected to a file (`cat a b > c`): the output is not meant for the model. */
  readonly stdoutToFile: boolean;
  readonly depth: number;
  add(finding: FindingInput): void;
  /** Parse and classify a script that this command would run (sh -c, eval, alias, trap…). */
  nested(script: string, options: NestedOptions): void;
  /** Do these substitutions run a network-fetching command? */
  substsFetch(substs: readonly ShNode[]): boolean;
  /** Remember a file written by a network download earlier in this command line. */
  markDownload(absolutePath: string): void;
  /** Was this file downloaded earlier in this command line (`curl -o x.sh …; bash x.sh`)? */
  isDownloaded(absolutePath: string): boolean;
  /** Record a file this command line writes, and what is known about its content. */
  markWritten(absolutePath: string, info: Written): void;
  /** A file written earlier in this command line. */
  written(absolutePath: string): Written | undefined;
  /** What a single command/process substitution prints, when statically known. */
  substOutput(substs: readonly ShNode[]): string | undefined;
  /** Is there a regular file at this absolute path? */
  isFile(absolutePath: string): boolean;
  /** Variables may have changed in a way that cannot be followed (`eval "$(…)"`, `source "$F"`). */
  forgetVars(): void;
  /** Same context with another working directory (git -C, env -C, find's start dirs). */
  withCwd(cwd: string | undefined): RuleContext;
}

// ---------- getopt ----------

export interface Parsed {
  readonly flags: ReadonlyMap<string, string | true>;
  readonly operands: Arg[];
  /** Arguments after the first operand when `permute` is false (a wrapped command). */
  readonly rest: Arg[];
  has(...names: string[]): boolean;
  get(name: string): string | undefined;
}

export interface OptSpec {
  /** Short options that take a value, e.g. "nc" for `-n 5 -c 3`. */
  readonly valued?: string;
  /** Long options that take a value (without `=`), e.g. ["--lines"]. */
  readonly longValued?: readonly string[];
  /** GNU style: options may follow operands. False for wrappers: the first operand starts a command. */
  readonly permute?: boolean;
}

export function parseOpts(args: readonly Arg[], spec: OptSpec = {}): Parsed {
  const flags = new Map<string, string | true>();
  const operands: Arg[] = [];
  const valued = spec.valued ?? '';
  const permute = spec.permute ?? true;
  let i = 0;
  for (; i < args.length; i++) {
    const arg = args[i] as Arg;
    const v = arg.value;
    if (v === '--') {
      operands.push(...args.slice(i + 1));
      i = args.length;
      break;
    }
    if (v.startsWith('--') && v.length > 2) {
      const eq = v.indexOf('=');
      if (eq !== -1) flags.set(v.slice(0, eq), v.slice(eq + 1));
      else if (spec.longValued?.includes(v)) flags.set(v, args[++i]?.value ?? '');
      else flags.set(v, true);
      continue;
    }
    if (v.startsWith('-') && v.length > 1) {
      for (let j = 1; j < v.length; j++) {
        const letter = v[j] as string;
        if (valued.includes(letter)) {
          const rest = v.slice(j + 1);
          flags.set(`-${letter}`, rest !== '' ? rest : (args[++i]?.value ?? ''));
          break;
        }
        flags.set(`-${letter}`, true);
      }
      continue;
    }
    operands.push(arg);
    if (!permute) {
      operands.push(...args.slice(i + 1));
      i = args.length;
      break;
    }
  }
  return {
    flags,
    operands,
    rest: permute ? [] : operands,
    has: (...names) => names.some((n) => flags.has(n)),
    get: (name) => {
      const f = flags.get(name);
      return typeof f === 'string' ? f : undefined;
    },
  };
}

export function values(args: readonly Arg[]): string[] {
  return args.map((a) => a.value);
}

/** A word list written compactly: words('a b', 'c') → ['a', 'b', 'c']. */
export function words(...lines: string[]): string[] {
  return lines
    .join(' ')
    .split(/\s+/)
    .filter((w) => w !== '');
}

/** Skips a wrapper's own options (`valued` ones take the next word) and returns the command it runs. */
export function skipThen(valued: readonly string[], extraPositional = 0): (args: readonly Arg[]) => Arg[] {
  return (args) => {
    let i = 0;
    for (; i < args.length; i++) {
      const v = (args[i] as Arg).value;
      if (v === '--') {
        i++;
        break;
      }
      if (!v.startsWith('-') || v === '-') break;
      if (valued.includes(v)) i++;
    }
    return args.slice(i + extraPositional);
  };
}

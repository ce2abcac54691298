import * as fs from 'node:fs';
import * as path from 'node:path';
import {
  type Arg,
  DECISION_OF,
  type Finding,
  type FindingInput,
  type StdinInfo,
  type Written,
} from '../rules/commandTypes.ts';
import { staticOutput } from './shellEval.ts';
import type { ShNode } from './shellParse.ts';
import { type ExpandEnv, expandWord } from './shellExpand.ts';

// What the walker knows while it reads a command line from left to right: variables and arrays
// assigned so far, the working directory, positional parameters, functions defined, files written.

export interface WalkOptions {
  readonly workspaceRoot: string;
  readonly home: string;
  readonly isFile: (absolutePath: string) => boolean;
}

export interface State {
  cwd: string | undefined;
  vars: Map<string, string | undefined>;
  arrays: Map<string, readonly string[] | undefined>;
  /** $0, $1, … (undefined entries: unknown); undefined inside functions called with unknown arguments. */
  positional: readonly (string | undefined)[] | undefined;
  /**
   * `declare -n r=z`: r reads and writes z. An undefined target (`local -n r=$UNKNOWN`) makes r
   * unknown; assigning through such a reference could change any variable, so every value becomes
   * unknown (`varsUnknown`).
   */
  namerefs: Map<string, string | undefined>;
  /** Some earlier command may have changed variables in a way that cannot be followed. */
  varsUnknown?: boolean;
}

/** A fresh state (the top of a command line, a nested `sh -c`). */
export function newState(cwd: string | undefined, positional: State['positional']): State {
  return { cwd, vars: new Map(), arrays: new Map(), positional, namerefs: new Map() };
}

const IDENT = /^[A-Za-z_][A-Za-z0-9_]*$/;
const MAX_NAMEREF_HOPS = 8;

/** The variable a name really stands for after following namerefs; undefined: cannot be known. */
export function resolveName(state: State, name: string): string | undefined {
  let current = name;
  for (let hops = 0; state.namerefs.has(current); hops++) {
    const next = state.namerefs.get(current);
    if (next === undefined || hops >= MAX_NAMEREF_HOPS || !IDENT.test(next)) return undefined;
    current = next;
  }
  return current;
}

/** Assigns a variable the way bash would, through namerefs. */
export function setVar(state: State, name: string, value: string | undefined): void {
  const target = resolveName(state, name);
  if (target === undefined) state.varsUnknown = true;
  else state.vars.set(target, value);
}

/** `declare -n name[=target]`. */
export function setNameref(state: State, name: string, target: string | undefined): void {
  state.namerefs.set(name, target);
  state.vars.delete(name);
  state.arrays.delete(name);
}

export interface Script {
  readonly buf: Buffer;
  readonly id: number;
}

export interface FunctionDef {
  readonly body: ShNode;
  readonly src: Script;
  /** Where it was defined, for judging it with unknown arguments if it is never called directly. */
  readonly state: State;
  readonly depth: number;
}

export interface Walker {
  readonly options: WalkOptions;
  readonly findings: Finding[];
  /** Keys (script id + node offsets) of simple commands already classified. */
  readonly visited: Set<string>;
  /** Keys of substitutions that run a network-fetching command. */
  readonly fetchingSubsts: Set<string>;
  scripts: number;
  /** Files written by network downloads so far, and whether a /dev/tcp socket was opened. */
  readonly downloads: Set<string>;
  socketOpened: boolean;
  readonly functions: Map<string, FunctionDef>;
  /** Functions being expanded (a function calling itself is not followed again). */
  readonly calling: Set<string>;
  /** Functions called directly somewhere (judged with their real arguments). */
  readonly called: Set<string>;
  /** Files this command line writes before it may run them (`echo … > x.sh; sh x.sh`). */
  readonly written: Map<string, Written>;
  /** >0 while analysing code whose harmless findings should not count (a $PAGER value). */
  quiet: number;
  /** >0 while only never-class findings count. */
  onlyNever: number;
  /** Findings that fetch from the network so far, counted even when not kept (quiet modes). */
  fetches: number;
}

export const MAX_FINDINGS = 500;
/** Beyond this many gating findings the command is refused rather than judged in part. */
export const MAX_FINDINGS_HARD = 5000;

export function newWalker(options: WalkOptions): Walker {
  return {
    options,
    findings: [],
    visited: new Set(),
    fetchingSubsts: new Set(),
    functions: new Map(),
    calling: new Set(),
    called: new Set(),
    written: new Map(),
    scripts: 0,
    downloads: new Set(),
    socketOpened: false,
    quiet: 0,
    onlyNever: 0,
    fetches: 0,
  };
}

export const clone = (s: State): State => ({
  cwd: s.cwd,
  vars: new Map(s.vars),
  arrays: new Map(s.arrays),
  positional: s.positional,
  namerefs: new Map(s.namerefs),
  ...(s.varsUnknown ? { varsUnknown: true } : {}),
});

export function defaultIsFile(p: string): boolean {
  try {
    return fs.statSync(p).isFile();
  } catch {
    return false;
  }
}

function positionalValue(state: State, name: string): string | undefined {
  const all = state.positional;
  if (!all) return undefined;
  if (/^\d+$/.test(name)) return Number(name) < all.length ? all[Number(name)] : '';
  const rest = all.slice(1);
  if (name === '#') return String(rest.length);
  return rest.some((p) => p === undefined) ? undefined : rest.join(' ');
}

export function envFor(state: State, w: Walker): ExpandEnv & { cwd: string | undefined } {
  const lookup = (raw: string): string | undefined => {
    const name = resolveName(state, raw);
    if (name === undefined || (state.varsUnknown && IDENT.test(name))) return undefined;
    if (state.vars.has(name)) return state.vars.get(name);
    if (/^(\d+|@|\*|#)$/.test(name)) return positionalValue(state, name);
    if (name === 'HOME') return w.options.home;
    if (name === 'PWD') return state.cwd;
    if (name === 'IFS') return ' \t\n';
    return undefined;
  };
  const lookupArray = (raw: string): readonly string[] | undefined => {
    const name = resolveName(state, raw);
    if (name === undefined || (state.varsUnknown && IDENT.test(name))) return undefined;
    if (name === '@' || name === '*') {
      const rest = state.positional?.slice(1);
      return rest?.every((p) => p !== undefined) ? (rest as string[]) : undefined;
    }
    return state.arrays.get(name);
  };
  const env: ExpandEnv & { cwd: string | undefined } = {
    lookup,
    lookupArray,
    home: w.options.home,
    cwd: state.cwd,
    substitute: (stmts) => staticOutput(stmts, env),
  };
  return env;
}

const HARMLESS: ReadonlySet<string> = new Set(['safe', 'use_tool', 'interactive']);

export function push(w: Walker, f: FindingInput, command: string): void {
  if (f.fetches) w.fetches++;
  if (w.quiet > 0 && HARMLESS.has(f.class)) return;
  if (w.onlyNever > 0 && f.class !== 'never') return;
  const decision = DECISION_OF[f.class];
  // Past the cap only findings that cannot change the verdict are dropped: an "allow" never can;
  // anything stricter is kept until the hard cap, which refuses the whole command line.
  if (w.findings.length >= MAX_FINDINGS && decision === 'allow') return;
  if (w.findings.length >= MAX_FINDINGS_HARD) {
    if (!w.findings.some((x) => x.program === TOO_MANY)) w.findings.push(tooMany(command));
    return;
  }
  const { command: own, ...rest } = f;
  w.findings.push({ ...rest, decision, command: own ?? command });
}

const TOO_MANY = '<too many commands>';

function tooMany(command: string): Finding {
  return {
    decision: 'refuse',
    class: 'unknown',
    risk: 'high',
    program: TOO_MANY,
    reason: 'the command line holds too many commands to check them all',
    suggestion: 'Write the steps to a script file with Write, then run it.',
    command: command.slice(0, 200),
  };
}

/** The value of an assignment's right-hand side: a scalar, or the elements of `(a b c)`. */
export function assignedValue(
  assign: ShNode,
  env: ExpandEnv,
): { scalar: string | undefined; guess: string; array?: readonly string[] | undefined } {
  const value = assign.Value as ShNode | undefined;
  const array = assign.Array as ShNode | undefined;
  if (array) {
    const elems = (array.Elems as ShNode[] | undefined) ?? [];
    const fields = elems.flatMap((e) => {
      const word = e.Value as ShNode | undefined;
      return word ? expandWord(word, env).fields : [];
    });
    const known = fields.every((f) => f.exact) && elems.every((e) => !e.Index);
    const items = known ? fields.map((f) => f.value) : undefined;
    const guess = fields.map((f) => f.value).join(' ');
    return { scalar: items ? (items[0] ?? '') : undefined, guess, array: items };
  }
  const fields = value ? expandWord(value, env).fields : [];
  const guess = fields.map((f) => f.value).join(' ');
  return { scalar: fields.every((f) => f.exact) ? guess : undefined, guess };
}

/** Assigns an array the way bash would, through namerefs. */
export function setArray(state: State, name: string, value: readonly string[] | undefined): void {
  const target = resolveName(state, name);
  if (target === undefined) state.varsUnknown = true;
  else state.arrays.set(target, value);
}

const DECLARE = new Set(['declare', 'typeset', 'local', 'export', 'readonly']);

/** Builtins that change what later commands mean: cd (relative paths), unset, read, declare… */
export function trackBuiltins(argv: readonly Arg[], state: State, home: string, stdin: StdinInfo): void {
  // `builtin declare …`, `command read …` are those builtins.
  let start = 0;
  while (
    /^(builtin|command)$/.test(argv[start]?.value ?? '') &&
    argv[start]?.exact &&
    !/^-[vV]/.test(argv[start + 1]?.value ?? '')
  )
    start++;
  const [head, ...rest] = argv.slice(start);
  if (!head?.exact) return;
  const operands = rest.filter((a) => !/^-[LPe@]+$/.test(a.value));
  if (head.value === 'cd' || head.value === 'pushd') {
    const to = operands[0];
    if (!to) state.cwd = head.value === 'cd' ? home : undefined;
    else if (!to.exact || to.value === '-') state.cwd = undefined;
    else
      state.cwd = path.isAbsolute(to.value)
        ? path.resolve(to.value)
        : state.cwd && path.resolve(state.cwd, to.value);
  } else if (head.value === 'popd') state.cwd = undefined;
  else if (head.value === 'unset') {
    const refs = operands.some((a) => /^-[a-z]*n/.test(a.value));
    for (const a of operands) {
      if (a.value.startsWith('-')) continue;
      if (!a.exact) state.varsUnknown = true;
      else if (refs) setNameref(state, a.value, undefined);
      else setVar(state, a.value, '');
    }
  } else if (head.value === 'read') readInto(rest, state, stdin);
  else if (head.value === 'mapfile' || head.value === 'readarray') {
    for (const a of operands) setArray(state, a.value, undefined);
    state.arrays.set('MAPFILE', undefined);
  } else if (DECLARE.has(head.value)) declared(head.value, rest, state);
  else if (head.value === 'printf' || head.value === 'wait' || head.value === 'getopts') {
    // `printf -v NAME …`, `wait -p NAME`, `getopts spec NAME`: NAME gets a value computed at run time.
    const at = rest.findIndex((a) => /^-[vp]$/.test(a.value));
    const name = head.value === 'getopts' ? rest[1] : at !== -1 ? rest[at + 1] : undefined;
    if (name) {
      if (name.exact) setVar(state, name.value, undefined);
      else state.varsUnknown = true;
    }
  } else if (head.value === 'set') {
    // `set -- a b c` (or `set a b`) replaces the positional parameters.
    const dashdash = rest.findIndex((a) => a.value === '--');
    const params = dashdash !== -1 ? rest.slice(dashdash + 1) : rest[0]?.value.startsWith('-') ? [] : rest;
    if (dashdash !== -1 || params.length > 0)
      state.positional = [
        state.positional?.[0] ?? 'bash',
        ...params.map((a) => (a.exact ? a.value : undefined)),
      ];
    else if (rest.some((a) => /^[-+]/.test(a.value) && !/^[-+][euxvo]/.test(a.value)))
      state.positional = undefined;
  } else if (head.value === 'shift') state.positional = undefined;
}

/**
 * `declare`/`local`/… run as an ordinary command (`builtin declare -n r=z`, `command local x=$1`):
 * the parser does not see them as declarations, so what they assign is taken from the words.
 */
function declared(builtin: string, args: readonly Arg[], state: State): void {
  const flags = args.filter((a) => /^[-+][a-zA-Z]+$/.test(a.value)).map((a) => a.value);
  const nameref = builtin !== 'export' && flags.some((f) => /^-[a-zA-Z]*n/.test(f));
  for (const a of args) {
    if (/^[-+][a-zA-Z]+$/.test(a.value)) continue;
    const eq = a.value.indexOf('=');
    const name = eq === -1 ? a.value : a.value.slice(0, eq);
    if (!a.exact || !IDENT.test(name)) {
      state.varsUnknown = true;
      continue;
    }
    const value = eq === -1 ? undefined : a.value.slice(eq + 1);
    if (nameref) setNameref(state, name, value);
    else if (eq !== -1) setVar(state, name, value);
  }
}

/** `read a b <<< "x y z"`: a=x, b="y z"; `read -a arr`: the words. Unknown input: unknown values. */
function readInto(args: readonly Arg[], state: State, stdin: StdinInfo): void {
  let arrayName: string | undefined;
  const names: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const v = (args[i] as Arg).value;
    if (v === '-a') arrayName = args[++i]?.value;
    else if (/^-[dnNpt]$/.test(v)) i++;
    else if (!v.startsWith('-')) names.push(v);
  }
  if (names.length === 0 && !arrayName) names.push('REPLY');
  const line = stdin.content?.split('\n')[0];
  const words = line === undefined ? undefined : line.split(/[ \t]+/).filter((x) => x !== '');
  if (arrayName) setArray(state, arrayName, words);
  names.forEach((name, k) => {
    const last = k === names.length - 1;
    setVar(state, name, words ? (last ? words.slice(k).join(' ') : (words[k] ?? '')) : undefined);
  });
}

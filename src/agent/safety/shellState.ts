import * as fs from 'node:fs';
import * as path from 'node:path';
import {
  type Arg,
  DECISION_OF,
  type Finding,
  type FindingInput,
  type StdinInfo,
  type Written,
} from './commandTypes.ts';
import { staticOutput } from './shellEval.ts';
import { type ExpandEnv, expandWord, type ShNode } from './shellParse.ts';

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
  const lookup = (name: string): string | undefined => {
    if (state.vars.has(name)) return state.vars.get(name);
    if (/^(\d+|@|\*|#)$/.test(name)) return positionalValue(state, name);
    if (name === 'HOME') return w.options.home;
    if (name === 'PWD') return state.cwd;
    if (name === 'IFS') return ' \t\n';
    return undefined;
  };
  const lookupArray = (name: string): readonly string[] | undefined => {
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
  if (w.findings.length >= MAX_FINDINGS) return;
  if (w.quiet > 0 && HARMLESS.has(f.class)) return;
  if (w.onlyNever > 0 && f.class !== 'never') return;
  const { command: own, ...rest } = f;
  w.findings.push({ ...rest, decision: DECISION_OF[f.class], command: own ?? command });
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

/** Builtins that change what later commands mean: cd (relative paths), unset, read. */
export function trackBuiltins(argv: readonly Arg[], state: State, home: string, stdin: StdinInfo): void {
  const [head, ...rest] = argv;
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
  else if (head.value === 'unset') for (const a of operands) state.vars.set(a.value, '');
  else if (head.value === 'read') readInto(rest, state, stdin);
  else if (head.value === 'mapfile' || head.value === 'readarray') {
    for (const a of operands) state.arrays.set(a.value, undefined);
    state.arrays.set('MAPFILE', undefined);
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
  if (arrayName) state.arrays.set(arrayName, words);
  names.forEach((name, k) => {
    const last = k === names.length - 1;
    state.vars.set(name, words ? (last ? words.slice(k).join(' ') : (words[k] ?? '')) : undefined);
  });
}

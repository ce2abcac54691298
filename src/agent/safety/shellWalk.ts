import * as fs from 'node:fs';
import * as path from 'node:path';
import { classifyArgv } from './commandRules.ts';
import {
  type Arg,
  DECISION_OF,
  type Finding,
  type FindingInput,
  NO_STDIN,
  type NestedOptions,
  type RuleContext,
  type StdinInfo,
} from './commandTypes.ts';
import { judgeRedirectTarget } from './pathRules.ts';
import { staticOutput } from './shellEval.ts';
import {
  child,
  children,
  type ExpandEnv,
  expandWord,
  flag,
  heredocBody,
  nodeKey,
  nodeType,
  num,
  OP,
  parseShell,
  type ShNode,
  sourceOf,
  str,
  walk,
} from './shellParse.ts';

// The command policy (Bash is the fallback, never the main road). The command is parsed with a real
// shell parser; every simple command — in pipelines, lists, subshells, substitutions, functions,
// nested `sh -c` / eval strings — is classified, and the most severe finding decides:
// block > refuse > ask > allow. The decision is code, not model judgement.

// Walks the syntax tree of a command line and classifies every simple command in it — in pipelines,
// lists, subshells, blocks, if/for/while/case, functions, command and process substitutions, and the
// scripts nested in `sh -c`, eval, aliases, traps — tracking what can be known statically: variables
// assigned earlier, the working directory after `cd`, what a pipe feeds into stdin.

export interface WalkOptions {
  readonly workspaceRoot: string;
  readonly home: string;
  readonly isFile: (absolutePath: string) => boolean;
}

const MAX_NESTING = 6;
const MAX_LOOP_VALUES = 8;
const MAX_FINDINGS = 500;

interface State {
  cwd: string | undefined;
  vars: Map<string, string | undefined>;
  /** $0, $1, … ; undefined inside functions (unknown arguments). */
  positional: readonly string[] | undefined;
}

interface Script {
  readonly buf: Buffer;
  readonly id: number;
}

interface Walker {
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
  readonly functions: Set<string>;
}

const clone = (s: State): State => ({ cwd: s.cwd, vars: new Map(s.vars), positional: s.positional });

export function defaultIsFile(p: string): boolean {
  try {
    return fs.statSync(p).isFile();
  } catch {
    return false;
  }
}

function lookupIn(state: State, w: Walker) {
  return (name: string): string | undefined => {
    if (state.vars.has(name)) return state.vars.get(name);
    if (/^\d+$/.test(name)) return state.positional ? (state.positional[Number(name)] ?? '') : undefined;
    if (name === '@' || name === '*')
      return state.positional ? state.positional.slice(1).join(' ') : undefined;
    if (name === '#') return state.positional ? String(Math.max(0, state.positional.length - 1)) : undefined;
    if (name === 'HOME') return w.options.home;
    if (name === 'PWD') return state.cwd;
    if (name === 'IFS') return ' \t\n';
    return undefined;
  };
}

function envFor(state: State, w: Walker): ExpandEnv & { cwd: string | undefined } {
  const env: ExpandEnv & { cwd: string | undefined } = {
    lookup: lookupIn(state, w),
    home: w.options.home,
    cwd: state.cwd,
    substitute: (stmts) => staticOutput(stmts, env),
  };
  return env;
}

function push(w: Walker, f: FindingInput, command: string): void {
  if (w.findings.length >= MAX_FINDINGS) return;
  const { command: own, ...rest } = f;
  w.findings.push({ ...rest, decision: DECISION_OF[f.class], command: own ?? command });
}

// ---------- walking the syntax tree ----------

function scanSubsts(node: ShNode | undefined, state: State, w: Walker, src: Script, depth: number): void {
  if (!node) return;
  walk(node, (n) => {
    const t = nodeType(n);
    if (t !== 'CmdSubst' && t !== 'ProcSubst') return true;
    const before = w.findings.length;
    walkStmts(children(n, 'Stmts'), clone(state), NO_STDIN, w, src, depth);
    if (w.findings.slice(before).some((f) => f.fetches)) w.fetchingSubsts.add(`${src.id}:${nodeKey(n)}`);
    return false;
  });
}

function walkStmts(
  stmts: ShNode[],
  state: State,
  stdin: StdinInfo,
  w: Walker,
  src: Script,
  depth: number,
): void {
  for (const stmt of stmts) walkStmt(stmt, state, stdin, w, src, depth);
}

const OUTPUT_OPS = new Set([OP.rdrOut, OP.appOut, OP.clbOut, OP.rdrAll, OP.appAll, OP.rdrInOut]);

interface Redirected {
  readonly input: StdinInfo;
  /** stdout goes to a file. */
  readonly toFile: boolean;
  /** Some stream is connected to /dev/tcp or /dev/udp. */
  readonly socket: boolean;
  /** Files stdout is written to. */
  readonly outputs: readonly string[];
}

function redirections(
  stmt: ShNode,
  state: State,
  stdin: StdinInfo,
  w: Walker,
  src: Script,
  depth: number,
): Redirected {
  let input = stdin;
  let toFile = false;
  let socket = false;
  const outputs: string[] = [];
  const env = envFor(state, w);
  for (const r of children(stmt, 'Redirs')) {
    const word = child(r, 'Word');
    scanSubsts(word, state, w, src, depth);
    scanSubsts(child(r, 'Hdoc'), state, w, src, depth);
    const op = num(r, 'Op');
    if (op === OP.hdoc || op === OP.dashHdoc || op === OP.wordHdoc) {
      const body = heredocBody(r, env);
      input = { kind: 'heredoc', network: false, ...(body.exact ? { content: body.text } : {}) };
      continue;
    }
    if (!word) continue;
    const fields = expandWord(word, env).fields;
    const field = fields[0] ?? { value: '', exact: false, glob: false };
    const arg: Arg = { ...field, substs: [] };
    const text = sourceOf(src.buf, stmt);
    const rc = ruleContext(state, input, false, w, src, depth, text);
    if (/^\/dev\/(tcp|udp)\//.test(field.value)) {
      socket = true;
      w.socketOpened = true;
    }
    if (op === OP.rdrIn) {
      const network = /^\/dev\/(tcp|udp)\//.test(field.value);
      if (network)
        rc.add({
          class: 'network',
          risk: 'high',
          program: 'redirection',
          reason: `reads from the network via ${field.value}`,
          fetches: true,
        });
      input = { kind: 'file', network };
    } else if (
      OUTPUT_OPS.has(op) ||
      ((op === OP.dplOut || op === OP.dplIn) && !/^(\d+|-)$/.test(field.value))
    ) {
      judgeRedirectTarget(arg, op === OP.appOut || op === OP.appAll, rc);
      const fd = str(child(r, 'N'), 'Value');
      if (fd === '' || fd === '1' || op === OP.rdrAll || op === OP.appAll) {
        toFile = true;
        if (field.exact && state.cwd !== undefined) outputs.push(path.resolve(state.cwd, field.value));
      }
      if (op === OP.rdrInOut) input = { kind: 'file', network: /^\/dev\/(tcp|udp)\//.test(field.value) };
    }
  }
  return { input, toFile, socket, outputs };
}

const SHELL_LIKE = /^((ba|z|da|k|mk|c|tc|fi|a)?sh|python[\d.]*|perl|ruby|php|node|lua)$/;

function walkStmt(stmt: ShNode, state: State, stdin: StdinInfo, w: Walker, src: Script, depth: number): void {
  const { input, toFile, socket, outputs } = redirections(stmt, state, stdin, w, src, depth);
  const cmd = child(stmt, 'Cmd');
  const t = nodeType(cmd);
  if (!cmd) return;
  if (socket && t === 'CallExpr') {
    const first = children(cmd, 'Args')[0];
    const program = first ? path.basename(expandWord(first, envFor(state, w)).fields[0]?.value ?? '') : '';
    if (SHELL_LIKE.test(program)) {
      const reason = `connects ${program} to a network socket (reverse shell)`;
      push(w, { class: 'never', risk: 'high', program, reason }, sourceOf(src.buf, stmt));
    }
  }
  switch (t) {
    case 'CallExpr': {
      const before = w.findings.length;
      walkCall(cmd, stmt, state, input, toFile, w, src, depth);
      // `curl … > x.sh`: the file now holds network content.
      if (w.findings.slice(before).some((f) => f.fetches)) for (const o of outputs) w.downloads.add(o);
      return;
    }
    case 'BinaryCmd': {
      const op = num(cmd, 'Op');
      const x = child(cmd, 'X');
      const y = child(cmd, 'Y');
      if (op === OP.pipe || op === OP.pipeAll) {
        const before = w.findings.length;
        if (x) walkStmt(x, clone(state), input, w, src, depth);
        const network = w.findings.slice(before).some((f) => f.fetches) || w.socketOpened;
        const content = x ? staticOutput([x], envFor(state, w)) : undefined;
        const piped: StdinInfo = { kind: 'pipe', network, ...(content !== undefined ? { content } : {}) };
        if (y) walkStmt(y, clone(state), piped, w, src, depth);
        return;
      }
      if (x) walkStmt(x, state, input, w, src, depth);
      if (y) walkStmt(y, state, input, w, src, depth);
      return;
    }
    case 'Subshell':
      walkStmts(children(cmd, 'Stmts'), clone(state), input, w, src, depth);
      return;
    case 'Block':
      walkStmts(children(cmd, 'Stmts'), state, input, w, src, depth);
      return;
    case 'IfClause': {
      let clause: ShNode | undefined = cmd;
      while (clause) {
        walkStmts(children(clause, 'Cond'), state, input, w, src, depth);
        walkStmts(children(clause, 'Then'), state, input, w, src, depth);
        clause = child(clause, 'Else');
      }
      return;
    }
    case 'WhileClause':
      walkStmts(children(cmd, 'Cond'), state, input, w, src, depth);
      walkStmts(children(cmd, 'Do'), state, input, w, src, depth);
      return;
    case 'ForClause':
      walkFor(cmd, state, input, w, src, depth);
      return;
    case 'CaseClause':
      scanSubsts(child(cmd, 'Word'), state, w, src, depth);
      for (const item of children(cmd, 'Items'))
        walkStmts(children(item, 'Stmts'), state, input, w, src, depth);
      return;
    case 'FuncDecl':
      walkFunction(cmd, state, w, src, depth);
      return;
    case 'TimeClause':
    case 'CoprocClause': {
      const inner = child(cmd, 'Stmt');
      if (inner) walkStmt(inner, state, input, w, src, depth);
      return;
    }
    case 'DeclClause':
      walkDecl(cmd, stmt, state, input, w, src, depth);
      return;
    default:
      // Arithmetic, [[ … ]], let: nothing runs except the substitutions inside.
      scanSubsts(cmd, state, w, src, depth);
  }
}

function walkFor(cmd: ShNode, state: State, input: StdinInfo, w: Walker, src: Script, depth: number): void {
  const loop = child(cmd, 'Loop');
  const body = children(cmd, 'Do');
  if (nodeType(loop) !== 'WordIter') {
    scanSubsts(loop, state, w, src, depth);
    walkStmts(body, state, input, w, src, depth);
    return;
  }
  const name = str(child(loop, 'Name'), 'Value');
  const env = envFor(state, w);
  const items = children(loop, 'Items');
  for (const item of items) scanSubsts(item, state, w, src, depth);
  const fields = items.flatMap((i) => expandWord(i, env).fields);
  const known =
    fields.length > 0 && fields.length <= MAX_LOOP_VALUES && fields.every((f) => f.exact && !f.glob);
  if (!known) {
    state.vars.set(name, undefined);
    walkStmts(body, state, input, w, src, depth);
    return;
  }
  for (const f of fields) {
    state.vars.set(name, f.value);
    walkStmts(body, state, input, w, src, depth);
  }
}

function walkFunction(cmd: ShNode, state: State, w: Walker, src: Script, depth: number): void {
  const name = str(child(cmd, 'Name'), 'Value');
  const body = child(cmd, 'Body');
  w.functions.add(name);
  if (!body) return;
  // A function that calls itself from a pipeline or in the background multiplies processes without
  // bound: the fork bomb, whatever its name (`:(){ :|:& };:`, `bomb(){ bomb|bomb& }; bomb`).
  let selfCalls = 0;
  let parallel = false;
  walk(body, (n) => {
    const t = nodeType(n);
    if (t === 'Stmt' && flag(n, 'Background')) parallel = true;
    if (t === 'BinaryCmd' && (num(n, 'Op') === OP.pipe || num(n, 'Op') === OP.pipeAll)) parallel = true;
    if (t === 'CallExpr') {
      const first = children(n, 'Args')[0];
      const value = first ? expandWord(first, envFor(state, w)).fields[0]?.value : undefined;
      if (value === name) selfCalls++;
    }
    return true;
  });
  if (selfCalls > 0 && parallel) {
    push(
      w,
      {
        class: 'never',
        risk: 'high',
        program: name,
        reason: `function ${name} spawns copies of itself without bound (fork bomb)`,
      },
      sourceOf(src.buf, cmd),
    );
  }
  walkStmt(body, { ...clone(state), positional: undefined }, NO_STDIN, w, src, depth);
}

function walkDecl(
  cmd: ShNode,
  stmt: ShNode,
  state: State,
  input: StdinInfo,
  w: Walker,
  src: Script,
  depth: number,
): void {
  const env = envFor(state, w);
  for (const a of children(cmd, 'Args')) {
    scanSubsts(a, state, w, src, depth);
    const name = str(child(a, 'Name'), 'Value');
    if (flag(a, 'Naked') || name === '') continue;
    const value = child(a, 'Value');
    const fields = value ? expandWord(value, env).fields : [];
    state.vars.set(name, fields.every((f) => f.exact) ? fields.map((f) => f.value).join(' ') : undefined);
  }
  push(
    w,
    { class: 'safe', risk: 'low', program: str(child(cmd, 'Variant'), 'Value'), reason: 'sets variables' },
    sourceOf(src.buf, stmt),
  );
  void input;
}

function walkCall(
  call: ShNode,
  stmt: ShNode,
  state: State,
  input: StdinInfo,
  toFile: boolean,
  w: Walker,
  src: Script,
  depth: number,
): void {
  w.visited.add(`${src.id}:${nodeKey(call)}`);
  const env = envFor(state, w);
  const prefix = new Map<string, string | undefined>();
  for (const a of children(call, 'Assigns')) {
    scanSubsts(a, state, w, src, depth);
    const value = child(a, 'Value');
    const fields = value ? expandWord(value, env).fields : [];
    const known = !child(a, 'Array') && fields.every((f) => f.exact);
    prefix.set(str(child(a, 'Name'), 'Value'), known ? fields.map((f) => f.value).join(' ') : undefined);
  }
  const words = children(call, 'Args');
  for (const word of words) scanSubsts(word, state, w, src, depth);
  if (words.length === 0) {
    for (const [k, v] of prefix) state.vars.set(k, v);
    return;
  }
  const argv: Arg[] = words.flatMap((word) => {
    const e = expandWord(word, env);
    return e.fields.map((f) => ({ ...f, substs: e.substs }));
  });
  const text = sourceOf(src.buf, stmt) || sourceOf(src.buf, call);
  const callState = prefix.size > 0 ? { ...state, vars: new Map([...state.vars, ...prefix]) } : state;
  classifyArgv(argv, ruleContext(callState, input, toFile, w, src, depth, text));
  trackBuiltins(argv, state, w.options.home);
}

/** Builtins that change what later commands mean: cd (relative paths), unset, read. */
function trackBuiltins(argv: readonly Arg[], state: State, home: string): void {
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
  else if (head.value === 'read' || head.value === 'mapfile' || head.value === 'readarray') {
    for (const a of operands) state.vars.set(a.value, undefined);
  } else if (head.value === 'set' || head.value === 'shift') state.positional = undefined;
}

function ruleContext(
  state: State,
  stdin: StdinInfo,
  stdoutToFile: boolean,
  w: Walker,
  src: Script,
  depth: number,
  text: string,
): RuleContext {
  const rc: RuleContext = {
    workspaceRoot: w.options.workspaceRoot,
    home: w.options.home,
    cwd: state.cwd,
    stdin,
    stdoutToFile,
    depth,
    add: (f) => push(w, f, text),
    nested: (script, options) => nested(script, options, state, w, depth, text),
    substsFetch: (substs) => substs.some((s) => w.fetchingSubsts.has(`${src.id}:${nodeKey(s)}`)),
    isFile: w.options.isFile,
    markDownload: (p) => w.downloads.add(p),
    isDownloaded: (p) => w.downloads.has(p),
    withCwd: (cwd) => ruleContext({ ...state, cwd }, stdin, stdoutToFile, w, src, depth, text),
  };
  return rc;
}

function nested(
  script: string,
  options: NestedOptions,
  state: State,
  w: Walker,
  depth: number,
  text: string,
): void {
  if (depth >= MAX_NESTING) {
    push(
      w,
      {
        class: 'unknown',
        risk: 'high',
        program: options.via,
        reason: `${options.via} nests scripts too deeply to check`,
      },
      text,
    );
    return;
  }
  const inner: State = {
    cwd: options.cwd ?? state.cwd,
    vars: new Map([...state.vars, ...(options.vars ?? [])]),
    positional: options.positional ? [...options.positional] : ['sh'],
  };
  analyse(script, inner, options.stdin ?? NO_STDIN, w, depth + 1, options.via, text);
}

function analyse(
  script: string,
  state: State,
  stdin: StdinInfo,
  w: Walker,
  depth: number,
  via: string,
  text: string,
): boolean {
  const parsed = parseShell(script);
  if (!parsed.ok) {
    push(
      w,
      {
        class: 'unknown',
        risk: 'high',
        program: via,
        reason: `${via} runs text that does not parse as shell (${parsed.error})`,
      },
      text,
    );
    return false;
  }
  const src: Script = { buf: Buffer.from(script, 'utf8'), id: w.scripts++ };
  walkStmts(children(parsed.file, 'Stmts'), state, stdin, w, src, depth);
  // Safety net: any simple command the structured walk did not reach (a construct added to the parser
  // after this code was written, a substitution in an odd place) is still classified.
  walk(parsed.file, (n) => {
    if (nodeType(n) === 'CallExpr' && !w.visited.has(`${src.id}:${nodeKey(n)}`))
      walkCall(
        n,
        n,
        { cwd: undefined, vars: new Map(), positional: undefined },
        NO_STDIN,
        false,
        w,
        src,
        depth,
      );
    return true;
  });
  return true;
}

/** Every finding for a parsed-OK command line. Throws only on internal errors. */
export function analyseCommand(command: string, options: WalkOptions): Finding[] {
  const w: Walker = {
    options,
    findings: [],
    visited: new Set(),
    fetchingSubsts: new Set(),
    functions: new Set(),
    scripts: 0,
    downloads: new Set(),
    socketOpened: false,
  };
  const state: State = { cwd: options.workspaceRoot, vars: new Map(), positional: ['bash'] };
  analyse(command, state, NO_STDIN, w, 0, 'command', command);
  return w.findings;
}

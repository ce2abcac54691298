import { classifyArgv } from '../rules/commandRules.ts';
import {
  type Arg,
  type Finding,
  NO_STDIN,
  type NestedOptions,
  type RuleContext,
  type StdinInfo,
} from '../rules/commandTypes.ts';
import { judgeAssignment } from '../rules/envRules.ts';
import { defineFunction } from './shellFunctions.ts';
import { catenatedFile, redirections } from './shellRedirects.ts';
import { ARITHMETIC, judgeReverseShell, reevaluated, walkDecl, walkFor } from './shellDecl.ts';
import { staticOutput } from './shellEval.ts';
import {
  child,
  children,
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
import { expandWord } from './shellExpand.ts';
import {
  assignedValue,
  clone,
  envFor,
  newState,
  newWalker,
  push,
  setArray,
  setVar,
  type Script,
  type State,
  trackBuiltins,
  type WalkOptions,
  type Walker,
} from './shellState.ts';

// Walks the syntax tree of a command line and classifies every simple command in it — in pipelines,
// lists, subshells, blocks, if/for/while/case, functions, command and process substitutions, and the
// scripts nested in `sh -c`, eval, aliases, traps — tracking what can be known statically: variables
// and arrays assigned earlier, the working directory after `cd`, what a pipe feeds into stdin,
// functions (followed at each call with its arguments), files written earlier in the same line.

export { defaultIsFile, type WalkOptions } from './shellState.ts';

const MAX_NESTING = 6;

// ---------- walking the syntax tree ----------

function scanSubsts(
  node: ShNode | undefined,
  state: State,
  w: Walker,
  src: Script,
  depth: number,
  stdin: StdinInfo = NO_STDIN,
): void {
  if (!node) return;
  walk(node, (n) => {
    const t = nodeType(n);
    if (t === 'ParamExp' || ARITHMETIC.has(t))
      reevaluated(n, state, w, (value, name) =>
        nested(value, { via: `re-evaluation of $${name}`, quiet: true }, state, w, depth, value),
      );
    if (t !== 'CmdSubst' && t !== 'ProcSubst') return true;
    const before = w.fetches;
    // A substitution reads the command's stdin: `curl … | bash -c "$(cat)"`.
    walkStmts(children(n, 'Stmts'), clone(state), stdin, w, src, depth);
    if (stdin.network || w.fetches > before) w.fetchingSubsts.add(`${src.id}:${nodeKey(n)}`);
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

function walkStmt(stmt: ShNode, state: State, stdin: StdinInfo, w: Walker, src: Script, depth: number): void {
  const { input, toFile, socket, outputs } = redirections(stmt, state, stdin, w, src, {
    scan: (node) => scanSubsts(node, state, w, src, depth),
    context: (input, text) => ruleContext(state, input, false, w, src, depth, text),
  });
  const cmd = child(stmt, 'Cmd');
  const t = nodeType(cmd);
  if (!cmd) return;
  if (socket && t === 'CallExpr') judgeReverseShell(cmd, stmt, state, w, src);
  switch (t) {
    case 'CallExpr': {
      const before = w.fetches;
      walkCall(cmd, stmt, state, input, toFile, w, src, depth);
      // `curl … > x.sh`: the file now holds network content; `echo … > x.sh`: it holds that text.
      const fetched = w.fetches > before;
      const content = outputs.length
        ? staticOutput([stmt], envFor(state, w), input.content, 0, true)
        : undefined;
      for (const o of outputs) {
        if (fetched) w.downloads.add(o.abs);
        const previous = o.append ? w.written.get(o.abs)?.content : '';
        const text = content !== undefined && previous !== undefined ? previous + content : undefined;
        w.written.set(o.abs, text !== undefined && !fetched ? { content: text } : {});
      }
      return;
    }
    case 'BinaryCmd': {
      const op = num(cmd, 'Op');
      const x = child(cmd, 'X');
      const y = child(cmd, 'Y');
      if (op === OP.pipe || op === OP.pipeAll) {
        const before = w.fetches;
        if (x) walkStmt(x, clone(state), input, w, src, depth);
        const network = w.fetches > before || w.socketOpened || input.network;
        const content = x ? staticOutput([x], envFor(state, w)) : undefined;
        const from = content === undefined && x ? catenatedFile(x, state, w) : undefined;
        const piped: StdinInfo = {
          kind: 'pipe',
          network,
          ...(content !== undefined ? { content } : {}),
          ...(from ? { path: from } : {}),
        };
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
      walkFor(
        cmd,
        state,
        w,
        (node) => scanSubsts(node, state, w, src, depth),
        (stmts) => walkStmts(stmts, state, input, w, src, depth),
      );
      return;
    case 'CaseClause':
      scanSubsts(child(cmd, 'Word'), state, w, src, depth);
      for (const item of children(cmd, 'Items'))
        walkStmts(children(item, 'Stmts'), state, input, w, src, depth);
      return;
    case 'FuncDecl':
      defineFunction(cmd, state, w, src, depth);
      return;
    case 'TimeClause':
    case 'CoprocClause': {
      const inner = child(cmd, 'Stmt');
      if (inner) walkStmt(inner, state, input, w, src, depth);
      return;
    }
    case 'DeclClause':
      walkDecl(
        cmd,
        stmt,
        state,
        w,
        src,
        ruleContext(state, input, false, w, src, depth, sourceOf(src.buf, stmt)),
        (node) => scanSubsts(node, state, w, src, depth),
      );
      return;
    default:
      // Arithmetic, [[ … ]], let: nothing runs except the substitutions inside.
      scanSubsts(cmd, state, w, src, depth);
  }
}

/** Functions never called directly may still run (`export -f`, traps, `$F`): judge them as such. */
function walkUncalledFunctions(w: Walker): void {
  for (const [name, def] of w.functions) {
    if (w.called.has(name)) continue;
    w.called.add(name);
    walkStmt(def.body, { ...clone(def.state), positional: undefined }, NO_STDIN, w, def.src, def.depth);
  }
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
  const text = sourceOf(src.buf, stmt) || sourceOf(src.buf, call);
  const prefix = new Map<string, string | undefined>();
  const arrays = new Map<string, readonly string[] | undefined>();
  const assignRc = ruleContext(state, input, toFile, w, src, depth, text);
  for (const a of children(call, 'Assigns')) {
    scanSubsts(a, state, w, src, depth);
    const name = str(child(a, 'Name'), 'Value');
    const { scalar, guess, array } = assignedValue(a, env);
    prefix.set(name, scalar);
    if (child(a, 'Array')) arrays.set(name, array);
    judgeAssignment(name, scalar, guess, assignRc);
  }
  const words = children(call, 'Args');
  for (const word of words) scanSubsts(word, state, w, src, depth, input);
  if (words.length === 0) {
    for (const [k, v] of prefix) setVar(state, k, v);
    for (const [k, v] of arrays) setArray(state, k, v);
    return;
  }
  const argv: Arg[] = words.flatMap((word) => {
    const e = expandWord(word, env);
    return e.fields.map((f) => ({ ...f, substs: e.substs }));
  });
  const callState = prefix.size > 0 ? { ...state, vars: new Map([...state.vars, ...prefix]) } : state;
  classifyArgv(argv, ruleContext(callState, input, toFile, w, src, depth, text));
  callFunction(argv, callState, input, w, depth);
  trackBuiltins(argv, state, w.options.home, input);
}

/** A call of a function defined earlier: its body runs with these arguments as $1, $2, … */
function callFunction(argv: readonly Arg[], state: State, input: StdinInfo, w: Walker, depth: number): void {
  const head = argv[0];
  const def = head?.exact ? w.functions.get(head.value) : undefined;
  if (!head || !def) return;
  w.called.add(head.value);
  if (w.calling.has(head.value) || depth >= MAX_NESTING) return;
  w.calling.add(head.value);
  const positional = [head.value, ...argv.slice(1).map((a) => (a.exact ? a.value : undefined))];
  walkStmt(def.body, { ...clone(state), positional }, input, w, def.src, depth + 1);
  w.calling.delete(head.value);
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
    markWritten: (p, info) => w.written.set(p, info),
    written: (p) => w.written.get(p),
    substOutput: (substs) => {
      const only = substs.length === 1 ? substs[0] : undefined;
      return only ? staticOutput(children(only, 'Stmts'), envFor(state, w)) : undefined;
    },
    forgetVars: () => {
      state.varsUnknown = true;
    },
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
  // eval and source run in this shell: what they assign or `cd` to holds for the commands after them.
  const inner: State = options.sameShell
    ? state
    : {
        ...clone(state),
        cwd: options.cwd ?? state.cwd,
        vars: new Map([...state.vars, ...(options.vars ?? [])]),
        positional: options.positional ? [...options.positional] : ['sh'],
      };
  if (options.quiet) w.quiet++;
  if (options.onlyNever) w.onlyNever++;
  try {
    analyse(script, inner, options.stdin ?? NO_STDIN, w, depth + 1, options.via, text);
  } finally {
    if (options.quiet) w.quiet--;
    if (options.onlyNever) w.onlyNever--;
  }
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
      walkCall(n, n, newState(undefined, undefined), NO_STDIN, false, w, src, depth);
    return true;
  });
  return true;
}

/** Every finding for a parsed-OK command line. Throws only on internal errors. */
export function analyseCommand(command: string, options: WalkOptions): Finding[] {
  const w = newWalker(options);
  const state = newState(options.workspaceRoot, ['bash']);
  analyse(command, state, NO_STDIN, w, 0, 'command', command);
  walkUncalledFunctions(w);
  return w.findings;
}

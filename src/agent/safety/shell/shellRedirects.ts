import * as path from 'node:path';
import type { Arg, RuleContext, StdinInfo } from '../rules/commandTypes.ts';
import { judgePathUse } from '../rules/outsidePaths.ts';
import { judgeRedirectTarget, resolvePath } from '../rules/pathRules.ts';
import { child, children, nodeType, num, OP, type ShNode, sourceOf, str } from './shellParse.ts';
import { expandWord, heredocBody } from './shellExpand.ts';
import { envFor, type Script, type State, type Walker } from './shellState.ts';

// A statement's redirections: here-docs and `< file` feed its stdin (a `< x.sh` into a shell is that
// script), `> file` and friends are writes judged by where they land, `< ~/.secret` is a read of an
// outside file, and /dev/tcp|udp opens the network.

// A function, not a constant: OP is read on first use, never at import.
const isOutputOp = (op: number) =>
  [OP.rdrOut, OP.appOut, OP.clbOut, OP.rdrAll, OP.appAll, OP.rdrInOut].includes(op);

export interface Redirected {
  readonly input: StdinInfo;
  /** stdout goes to a file. */
  readonly toFile: boolean;
  /** Some stream is connected to /dev/tcp or /dev/udp. */
  readonly socket: boolean;
  /** Files stdout is written to. */
  readonly outputs: readonly { readonly abs: string; readonly append: boolean }[];
}

export interface RedirectHooks {
  /** Judge the command substitutions inside a node (`> "$(cmd)"`). */
  scan(node: ShNode | undefined): void;
  /** A rule context for this statement with the given stdin. */
  context(input: StdinInfo, text: string): RuleContext;
}

/** What a statement's redirections do: its stdin, whether stdout goes to files, sockets opened. */
export function redirections(
  stmt: ShNode,
  state: State,
  stdin: StdinInfo,
  w: Walker,
  src: Script,
  hooks: RedirectHooks,
): Redirected {
  let input = stdin;
  let toFile = false;
  let socket = false;
  const outputs: { abs: string; append: boolean }[] = [];
  const env = envFor(state, w);
  for (const r of children(stmt, 'Redirs')) {
    const word = child(r, 'Word');
    hooks.scan(word);
    hooks.scan(child(r, 'Hdoc'));
    const op = num(r, 'Op');
    if (op === OP.hdoc || op === OP.dashHdoc || op === OP.wordHdoc) {
      const body = heredocBody(r, env);
      input = { kind: 'heredoc', network: false, ...(body.exact ? { content: body.text } : {}) };
      continue;
    }
    if (!word) continue;
    const expanded = expandWord(word, env);
    const fields = expanded.fields;
    const field = fields[0] ?? { value: '', exact: false, glob: false };
    const arg: Arg = { ...field, substs: [] };
    const text = sourceOf(src.buf, stmt);
    const rc = hooks.context(input, text);
    if (/^\/dev\/(tcp|udp)\//.test(field.value)) {
      socket = true;
      w.socketOpened = true;
    }
    if (op === OP.rdrIn) {
      // `sh < <(curl …)` reads what the network sent, just like `curl … | sh`.
      const network = /^\/dev\/(tcp|udp)\//.test(field.value) || rc.substsFetch(expanded.substs);
      if (network)
        rc.add({
          class: 'network',
          risk: 'high',
          program: 'redirection',
          reason: `reads from the network via ${field.value}`,
          fetches: true,
        });
      if (field.exact && !network) judgePathUse(field.value, 'reads', 'redirection', rc);
      const from = field.exact ? resolvePath(field.value, rc) : undefined;
      input = { kind: 'file', network, ...(from ? { path: from } : {}) };
    } else if (isOutputOp(op) || ((op === OP.dplOut || op === OP.dplIn) && !/^(\d+|-)$/.test(field.value))) {
      judgeRedirectTarget(arg, op === OP.appOut || op === OP.appAll, rc);
      const fd = str(child(r, 'N'), 'Value');
      if (fd === '' || fd === '1' || op === OP.rdrAll || op === OP.appAll) {
        toFile = true;
        if (field.exact && (state.cwd !== undefined || path.isAbsolute(field.value)))
          outputs.push({
            abs: path.resolve(state.cwd ?? '/', field.value),
            append: op === OP.appOut || op === OP.appAll,
          });
      }
      if (op === OP.rdrInOut) input = { kind: 'file', network: /^\/dev\/(tcp|udp)\//.test(field.value) };
    }
  }
  return { input, toFile, socket, outputs };
}

/** `cat x.sh | sh` feeds the file x.sh: the shell runs it as it would run `sh x.sh`. */
export function catenatedFile(stmt: ShNode, state: State, w: Walker): string | undefined {
  const cmd = child(stmt, 'Cmd');
  if (nodeType(cmd) !== 'CallExpr' || children(stmt, 'Redirs').length > 0) return undefined;
  const argv = children(cmd, 'Args').flatMap((a) => expandWord(a, envFor(state, w)).fields);
  const [head, file, ...rest] = argv;
  if (head?.value !== 'cat' || !file?.exact || file.glob || rest.length > 0 || file.value.startsWith('-'))
    return undefined;
  return path.isAbsolute(file.value) || state.cwd !== undefined
    ? path.resolve(state.cwd ?? '/', file.value)
    : undefined;
}

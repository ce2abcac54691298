import * as path from 'node:path';
import type { RuleContext } from '../rules/commandTypes.ts';
import { judgeAssignment } from '../rules/envRules.ts';
import { child, children, flag, nodeType, num, OP, type ShNode, sourceOf, str, walk } from './shellParse.ts';
import { expandWord } from './shellExpand.ts';
import {
  assignedValue,
  envFor,
  push,
  setArray,
  setNameref,
  setVar,
  type Script,
  type State,
  type Walker,
} from './shellState.ts';

// Declarations, for-loops, values bash evaluates a second time and reverse shells — split from
// shellWalk.ts, which recurses into them through the callbacks passed in.

const MAX_LOOP_VALUES = 8;
const SHELL_LIKE = /^((ba|z|da|k|mk|c|tc|fi|a)?sh|python[\d.]*|perl|ruby|php|node|lua)$/;

export const ARITHMETIC = new Set(['ArithmExp', 'ArithmCmd', 'LetClause', 'TestClause']);

/**
 * Values bash evaluates again: `${x@P}` (prompt expansion runs `$(…)` in x) and arithmetic, where
 * `x='a[$(cmd)]'; echo $((x))` runs cmd through the array subscript.
 */
export function reevaluated(
  n: ShNode,
  state: State,
  w: Walker,
  runNested: (script: string, name: string) => void,
): void {
  const t = nodeType(n);
  const names: string[] = [];
  if (t === 'ParamExp') {
    const exp = child(n, 'Exp');
    if (
      num(exp, 'Op') === OP.otherParamOps &&
      /P/.test(str(children(child(exp, 'Word'), 'Parts')[0], 'Value'))
    )
      names.push(str(child(n, 'Param'), 'Value'));
  } else if (ARITHMETIC.has(t)) {
    walk(n, (m) => {
      const mt = nodeType(m);
      if (mt === 'Lit' && /^[A-Za-z_]\w*$/.test(str(m, 'Value'))) names.push(str(m, 'Value'));
      if (mt === 'ParamExp') names.push(str(child(m, 'Param'), 'Value'));
      return true;
    });
  }
  for (const name of names) {
    const value = state.vars.get(name);
    if (value !== undefined && /\$\(|`/.test(value)) {
      runNested(value, name);
    } else if (value === undefined && state.vars.has(name) && t === 'ParamExp') {
      push(
        w,
        {
          class: 'unknown',
          risk: 'high',
          program: `\${${name}@P}`,
          reason: `\${${name}@P} runs substitutions in a value not known in advance`,
        },
        name,
      );
    }
  }
}

/**
 * `declare`/`export`/`local`/`readonly …`: records the assignments (namerefs included) and judges each
 * one like a plain assignment. `scan` walks the substitutions inside an argument.
 */
export function walkDecl(
  cmd: ShNode,
  stmt: ShNode,
  state: State,
  w: Walker,
  src: Script,
  rc: RuleContext,
  scan: (node: ShNode) => void,
): void {
  const env = envFor(state, w);
  const variant = str(child(cmd, 'Variant'), 'Value');
  let nameref = false;
  for (const a of children(cmd, 'Args')) {
    scan(a);
    const name = str(child(a, 'Name'), 'Value');
    if (name === '') {
      // An option word (`-n`, `-gn`), or a name computed at run time (`declare "$x"=…`).
      const word = child(a, 'Value');
      const field = word ? expandWord(word, env).fields[0] : undefined;
      if (field?.exact && /^[-+][a-zA-Z]+$/.test(field.value)) {
        if (variant !== 'export' && /^-[a-zA-Z]*n/.test(field.value)) nameref = true;
      } else if (word) state.varsUnknown = true;
      continue;
    }
    if (nameref) {
      // `declare -n r=z`: r now reads and writes z; an unknown target makes r unknown.
      const { scalar } = assignedValue(a, env);
      setNameref(state, name, flag(a, 'Naked') ? undefined : scalar);
      continue;
    }
    if (flag(a, 'Naked')) {
      // `export PAGER` exports whatever was assigned before.
      if (state.vars.has(name)) judgeAssignment(name, state.vars.get(name), state.vars.get(name) ?? '', rc);
      continue;
    }
    const { scalar, guess, array } = assignedValue(a, env);
    setVar(state, name, scalar);
    if (array !== undefined || child(a, 'Array')) setArray(state, name, array);
    judgeAssignment(name, scalar, guess, rc);
  }
  push(
    w,
    { class: 'safe', risk: 'low', program: variant, reason: 'sets variables' },
    sourceOf(src.buf, stmt),
  );
}

/** `for x in a b c`: the body is walked once per known value, or once with x unknown. */
export function walkFor(
  cmd: ShNode,
  state: State,
  w: Walker,
  scan: (node: ShNode | undefined) => void,
  body: (stmts: ShNode[]) => void,
): void {
  const loop = child(cmd, 'Loop');
  const stmts = children(cmd, 'Do');
  if (nodeType(loop) !== 'WordIter') {
    scan(loop);
    body(stmts);
    return;
  }
  const name = str(child(loop, 'Name'), 'Value');
  const env = envFor(state, w);
  const items = children(loop, 'Items');
  for (const item of items) scan(item);
  const fields = items.flatMap((i) => expandWord(i, env).fields);
  const known =
    fields.length > 0 && fields.length <= MAX_LOOP_VALUES && fields.every((f) => f.exact && !f.glob);
  if (!known) {
    setVar(state, name, undefined);
    body(stmts);
    return;
  }
  for (const f of fields) {
    setVar(state, name, f.value);
    body(stmts);
  }
}

/** `bash > /dev/tcp/host/port` and the like: a shell wired to a network socket. */
export function judgeReverseShell(cmd: ShNode, stmt: ShNode, state: State, w: Walker, src: Script): void {
  const first = children(cmd, 'Args')[0];
  const program = first ? path.basename(expandWord(first, envFor(state, w)).fields[0]?.value ?? '') : '';
  if (SHELL_LIKE.test(program)) {
    const reason = `connects ${program} to a network socket (reverse shell)`;
    push(w, { class: 'never', risk: 'high', program, reason }, sourceOf(src.buf, stmt));
  }
}

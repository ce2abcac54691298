import { clone, envFor, push, type Script, type State, type Walker } from './shellState.ts';
import { child, children, flag, nodeType, num, OP, type ShNode, sourceOf, str, walk } from './shellParse.ts';
import { expandWord } from './shellExpand.ts';

// Function definitions: remembered (with the state they were defined in) so each call is judged with
// its real arguments, and judged at once for the one thing a definition alone can be — a fork bomb.

export function defineFunction(cmd: ShNode, state: State, w: Walker, src: Script, depth: number): void {
  const name = str(child(cmd, 'Name'), 'Value');
  const body = child(cmd, 'Body');
  if (!body) return;
  w.functions.set(name, { body, src, state: clone(state), depth });
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
}

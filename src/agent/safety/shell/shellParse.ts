import { createRequire } from 'node:module';
import type sh from 'mvdan-sh';

// A thin, typed layer over mvdan-sh (mvdan/sh's parser compiled to JS): parse, walk, and expand words
// the way bash would when their value is knowable from the command text alone (quotes, escapes,
// $'…', tilde, braces, variables assigned earlier in the same command, `$(echo …)`-style
// substitutions). Whatever cannot be known is reported as not exact, so the policy can be strict.

export interface ShNode {
  readonly [key: string]: unknown;
}

interface SyntaxApi {
  NewParser(): { Parse(src: string, name: string): ShNode };
  NodeType(node: ShNode): string;
  Walk(node: ShNode, visit: (node: ShNode | null) => boolean): void;
}

// mvdan-sh (GopherJS, CommonJS, ~100 ms to load) is required on the first parse, not at start-up:
// `keel tool LS` and a session that never runs a command never pay for it. require() keeps the API
// synchronous; the bundles leave mvdan-sh external, so Node resolves it from node_modules either way.
let loaded: SyntaxApi | undefined;
function syntaxApi(): SyntaxApi {
  loaded ??= (createRequire(import.meta.url)('mvdan-sh') as typeof sh).syntax as SyntaxApi;
  return loaded;
}

export type ParseResult =
  | { readonly ok: true; readonly file: ShNode }
  | { readonly ok: false; readonly error: string };

export function parseShell(src: string): ParseResult {
  try {
    return { ok: true, file: syntaxApi().NewParser().Parse(src, 'command') };
  } catch (error) {
    const e = error as { Error?: () => string; message?: string };
    const message = typeof e.Error === 'function' ? e.Error() : String(e.message ?? error);
    return { ok: false, error: message.replace(/^command:/, '') };
  }
}

// Literal parts synthesised by brace-sequence expansion ({1..3}); mvdan's NodeType only knows its own.
const synthetic = new WeakSet<ShNode>();

/** Record a literal part made by brace-sequence expansion, so nodeType() reports it as 'Lit'. */
export function markSynthetic(node: ShNode): void {
  synthetic.add(node);
}

export function isSynthetic(node: ShNode): boolean {
  return synthetic.has(node);
}

export function nodeType(node: ShNode | null | undefined): string {
  if (!node) return '';
  return synthetic.has(node) ? 'Lit' : syntaxApi().NodeType(node);
}

export function walk(node: ShNode, visit: (node: ShNode) => boolean): void {
  syntaxApi().Walk(node, (n) => (n ? visit(n) : true));
}

export function child(node: ShNode | null | undefined, key: string): ShNode | undefined {
  const v = node?.[key];
  return v && typeof v === 'object' ? (v as ShNode) : undefined;
}

export function children(node: ShNode | null | undefined, key: string): ShNode[] {
  const v = node?.[key];
  return Array.isArray(v) ? (v as ShNode[]) : [];
}

export function str(node: ShNode | null | undefined, key: string): string {
  const v = node?.[key];
  return typeof v === 'string' ? v : '';
}

export function num(node: ShNode | null | undefined, key: string): number {
  const v = node?.[key];
  return typeof v === 'number' ? v : -1;
}

export function flag(node: ShNode | null | undefined, key: string): boolean {
  return node?.[key] === true;
}

/** Identity of a node within one parsed script (the JS wrappers are recreated on every access). */
export function nodeKey(node: ShNode): string {
  const pos = node.Pos as (() => { Offset(): number }) | undefined;
  const end = node.End as (() => { Offset(): number }) | undefined;
  if (typeof pos !== 'function' || typeof end !== 'function') return '';
  return `${nodeType(node)}@${pos.call(node).Offset()}-${end.call(node).Offset()}`;
}

/** Source text of a node (offsets are UTF-8 byte offsets). */
export function sourceOf(src: Buffer, node: ShNode): string {
  const pos = node.Pos as (() => { Offset(): number }) | undefined;
  const end = node.End as (() => { Offset(): number }) | undefined;
  if (typeof pos !== 'function' || typeof end !== 'function') return '';
  return src.subarray(pos.call(node).Offset(), end.call(node).Offset()).toString('utf8');
}

/** An object whose values are computed together, the first time any of them is read. */
function lazyTable<K extends string>(samples: Record<K, () => number>): { readonly [key in K]: number } {
  let values: Record<string, number> | undefined;
  const table = {} as { [key in K]: number };
  for (const key of Object.keys(samples) as K[]) {
    Object.defineProperty(table, key, {
      enumerable: true,
      get: () => {
        values ??= Object.fromEntries(Object.entries<() => number>(samples).map(([k, read]) => [k, read()]));
        return values[key] as number;
      },
    });
  }
  return table;
}

// Operator codes are Go iota values; read them off parsed samples instead of hard-coding a version.
function stmt0(src: string): ShNode | undefined {
  const r = parseShell(src);
  return r.ok ? children(r.file, 'Stmts')[0] : undefined;
}
const binOp = (src: string) => num(child(stmt0(src), 'Cmd'), 'Op');
const redirOp = (src: string) => num(children(stmt0(src), 'Redirs')[0], 'Op');
const procOp = (src: string) =>
  num(children(children(child(stmt0(src), 'Cmd'), 'Args')[1], 'Parts')[0], 'Op');
const expOp = (src: string) =>
  num(child(children(children(child(stmt0(src), 'Cmd'), 'Args')[0], 'Parts')[0], 'Exp'), 'Op');

// Read on first use (the first command checked), not at import: parsing needs mvdan-sh loaded.
export const OP = lazyTable({
  and: () => binOp('a && b'),
  or: () => binOp('a || b'),
  pipe: () => binOp('a | b'),
  pipeAll: () => binOp('a |& b'),
  rdrOut: () => redirOp('a > b'),
  appOut: () => redirOp('a >> b'),
  rdrIn: () => redirOp('a < b'),
  rdrInOut: () => redirOp('a <> b'),
  dplIn: () => redirOp('a <&0'),
  dplOut: () => redirOp('a >&2'),
  clbOut: () => redirOp('a >| b'),
  hdoc: () => redirOp('a <<E\nE\n'),
  dashHdoc: () => redirOp('a <<-E\nE\n'),
  wordHdoc: () => redirOp('a <<< b'),
  rdrAll: () => redirOp('a &> b'),
  appAll: () => redirOp('a &>> b'),
  procIn: () => procOp('a <(b)'),
  procOut: () => procOp('a >(b)'),
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell parameter expansion, not a template
  defUnset: () => expOp('${a-b}'),
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell parameter expansion, not a template
  defUnsetOrNull: () => expOp('${a:-b}'),
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell parameter expansion, not a template
  assignUnset: () => expOp('${a=b}'),
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell parameter expansion, not a template
  assignUnsetOrNull: () => expOp('${a:=b}'),
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell parameter expansion, not a template
  altUnset: () => expOp('${a+b}'),
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell parameter expansion, not a template
  altUnsetOrNull: () => expOp('${a:+b}'),
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell parameter expansion, not a template
  otherParamOps: () => expOp('${a@P}'),
});

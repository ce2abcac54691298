import { expandBraces, MAX_BRACE_ALTERNATIVES } from './shellBraces.ts';
import {
  child,
  isSynthetic,
  children,
  flag,
  markSynthetic,
  nodeType,
  num,
  OP,
  str,
  type ShNode,
} from './shellParse.ts';

// Word expansion: what bash would make of a word, as far as the command text alone tells.

export interface ExpandEnv {
  /** Value of a variable; undefined when it cannot be known from the command text. */
  lookup(name: string): string | undefined;
  /** Elements of an array variable (`a=(x y)`); undefined when not known. */
  lookupArray?(name: string): readonly string[] | undefined;
  readonly home: string;
  /** Static output of a command substitution, if it can be computed without running anything. */
  substitute(stmts: ShNode[]): string | undefined;
}

export interface Field {
  /** The value with every unknowable part taken as empty (the worst case for `rm -rf "$X"/`). */
  readonly value: string;
  /** False when some part could not be known (variables from the environment, `$(cmd)`, …). */
  readonly exact: boolean;
  /** Contains unquoted glob characters (`*`, `?`, `[`). */
  readonly glob: boolean;
  /** Brace expansion produced more alternatives than are checked: the rest were not seen. */
  readonly truncated?: boolean;
}

export interface ExpandedWord {
  readonly fields: Field[];
  /** Command and process substitutions appearing directly in the word. */
  readonly substs: ShNode[];
}

interface Seg {
  text: string;
  split: boolean;
  exact: boolean;
  glob: boolean;
  /** Quoted (even empty) text keeps a field alive: `''` is one empty argument. */
  keeps: boolean;
  /** Ends the current field ("${a[@]}" yields one field per element). */
  brk?: boolean;
}

// `*`, `?` or a bracket expression `[…]`, not escaped by a backslash (a lone `[` is the test command).
const GLOB_UNESCAPED = /(^|[^\\])(\\\\)*([*?]|\[[^\]]+\])/;

function unescapeUnquoted(raw: string): string {
  return raw.replace(/\\\n/g, '').replace(/\\(.)/gs, '$1');
}

function unescapeDouble(raw: string): string {
  return raw.replace(/\\\n/g, '').replace(/\\([$`"\\])/g, '$1');
}

/** Decodes bash's `$'…'` (ANSI-C quoting). */
export function decodeAnsiC(raw: string): string {
  const simple: Record<string, string> = {
    a: '\x07',
    b: '\b',
    e: '\x1b',
    E: '\x1b',
    f: '\f',
    n: '\n',
    r: '\r',
    t: '\t',
    v: '\v',
    '\\': '\\',
    "'": "'",
    '"': '"',
    '?': '?',
  };
  return raw.replace(
    /\\(x[0-9a-fA-F]{1,2}|u[0-9a-fA-F]{1,4}|U[0-9a-fA-F]{1,8}|[0-7]{1,3}|c.|.)/gs,
    (_m, esc: string) => {
      const head = esc[0] ?? '';
      if (head === 'x' || head === 'u' || head === 'U')
        return String.fromCodePoint(Number.parseInt(esc.slice(1), 16));
      if (/[0-7]/.test(head)) return String.fromCharCode(Number.parseInt(esc, 8) & 0xff);
      if (head === 'c' && esc.length === 2) return String.fromCharCode(esc.charCodeAt(1) & 0x1f);
      return simple[esc] ?? `\\${esc}`;
    },
  );
}

function literalOf(word: ShNode | undefined): string | undefined {
  const parts = children(word, 'Parts');
  if (parts.length !== 1 || nodeType(parts[0]) !== 'Lit') return undefined;
  return str(parts[0], 'Value');
}

/** `${a[@]}` / `${a[*]}` / `${a[N]}`: the elements selected, when the array is known. */
function arrayElements(pe: ShNode, env: ExpandEnv): { all: boolean; items: readonly string[] } | undefined {
  const name = str(child(pe, 'Param'), 'Value');
  // "$@" is the positional parameters as separate words, like "${a[@]}".
  const index = name === '@' || name === '*' ? name : literalOf(child(pe, 'Index'));
  if ((name === '@' || name === '*') && (child(pe, 'Index') || flag(pe, 'Length') || child(pe, 'Slice')))
    return undefined;
  const items = env.lookupArray?.(name);
  if (index === undefined || items === undefined || flag(pe, 'Excl') || child(pe, 'Exp')) return undefined;
  if (index === '@' || index === '*') return { all: index === '@', items };
  if (!/^\d+$/.test(index)) return undefined;
  return { all: false, items: [items[Number(index)] ?? ''] };
}

/**
 * What an unknown `${X:-default}`, `${X:=default}` or `${X:+alt}` most plausibly becomes: the
 * word given in the expansion (`rm -rf "${DIR:-/}"` is judged as `rm -rf /`).
 */
function paramGuess(pe: ShNode, env: ExpandEnv): string | undefined {
  const exp = child(pe, 'Exp');
  if (!exp) return undefined;
  const op = num(exp, 'Op');
  const ops = [
    OP.defUnset,
    OP.defUnsetOrNull,
    OP.assignUnset,
    OP.assignUnsetOrNull,
    OP.altUnset,
    OP.altUnsetOrNull,
  ];
  const word = child(exp, 'Word');
  if (!ops.includes(op) || !word) return undefined;
  return expandWord(word, env)
    .fields.map((f) => f.value)
    .join(' ');
}

function paramValue(pe: ShNode, env: ExpandEnv): string | undefined {
  let name = str(child(pe, 'Param'), 'Value');
  if (child(pe, 'Index') || num(pe, 'Names') > 0) return undefined;
  if (flag(pe, 'Excl')) {
    // `${!ref}`: the value of the variable whose name ref holds (`h=HOME; ${!h}`).
    const target = env.lookup(name);
    if (target === undefined || !/^[A-Za-z_][A-Za-z0-9_]*$/.test(target)) return undefined;
    name = target;
  }
  const value = env.lookup(name);
  if (flag(pe, 'Length')) return value === undefined ? undefined : String(value.length);
  const slice = child(pe, 'Slice');
  if (slice) {
    if (value === undefined) return undefined;
    const off = Number(literalOf(child(slice, 'Offset')) ?? Number.NaN);
    const lenWord = child(slice, 'Length');
    const len = lenWord ? Number(literalOf(lenWord) ?? Number.NaN) : undefined;
    if (!Number.isInteger(off) || (len !== undefined && !Number.isInteger(len))) return undefined;
    const start = off < 0 ? Math.max(0, value.length + off) : off;
    return len === undefined
      ? value.slice(start)
      : value.slice(start, len < 0 ? value.length + len : start + len);
  }
  const repl = child(pe, 'Repl');
  if (repl) {
    const from = literalOf(child(repl, 'Orig'));
    const to = child(repl, 'With') ? literalOf(child(repl, 'With')) : '';
    if (value === undefined || from === undefined || to === undefined || /[*?[]/.test(from) || from === '') {
      return undefined;
    }
    return flag(repl, 'All') ? value.split(from).join(to) : value.replace(from, to);
  }
  const exp = child(pe, 'Exp');
  if (exp) {
    const op = num(exp, 'Op');
    const isDefault = [OP.defUnset, OP.defUnsetOrNull, OP.assignUnset, OP.assignUnsetOrNull].includes(op);
    if (isDefault && value !== undefined && value !== '') return value;
    return undefined;
  }
  return value;
}

function segmentsOf(
  parts: ShNode[],
  env: ExpandEnv,
  substs: ShNode[],
  quoted: boolean,
  first: boolean,
): Seg[] {
  const out: Seg[] = [];
  parts.forEach((part, i) => {
    const t = nodeType(part);
    if (t === 'Lit') {
      let raw = str(part, 'Value');
      if (quoted) {
        out.push({ text: unescapeDouble(raw), split: false, exact: true, glob: false, keeps: true });
        return;
      }
      let prefix = '';
      if (first && i === 0 && raw.startsWith('~')) {
        const slash = raw.indexOf('/');
        const user = slash === -1 ? raw.slice(1) : raw.slice(1, slash);
        if (user === '') prefix = env.home;
        else if (user === '+') prefix = env.lookup('PWD') ?? '';
        else if (/^[A-Za-z0-9._-]+$/.test(user)) prefix = `/home/${user}`;
        if (prefix !== '' || user === '') raw = slash === -1 ? '' : raw.slice(slash);
      }
      out.push({
        text: prefix + unescapeUnquoted(raw),
        split: false,
        exact: true,
        glob: GLOB_UNESCAPED.test(raw),
        keeps: prefix !== '',
      });
    } else if (t === 'SglQuoted') {
      const v = str(part, 'Value');
      out.push({
        text: flag(part, 'Dollar') ? decodeAnsiC(v) : v,
        split: false,
        exact: true,
        glob: false,
        keeps: true,
      });
    } else if (t === 'DblQuoted') {
      const inner = segmentsOf(children(part, 'Parts'), env, substs, true, false);
      out.push({ text: '', split: false, exact: true, glob: false, keeps: true }, ...inner);
    } else if (t === 'ParamExp') {
      const elements = arrayElements(part, env);
      if (elements && !flag(part, 'Length')) {
        const joined = !elements.all && quoted;
        const items = joined ? [elements.items.join((env.lookup('IFS') ?? ' ').slice(0, 1))] : elements.items;
        items.forEach((item, k) => {
          if (k > 0) out.push({ text: '', split: false, exact: true, glob: false, keeps: false, brk: true });
          out.push({
            text: item,
            split: !quoted,
            exact: true,
            glob: !quoted && /[*?[]/.test(item),
            keeps: quoted,
          });
        });
        return;
      }
      const v = paramValue(part, env);
      out.push({
        text: v ?? paramGuess(part, env) ?? '',
        split: !quoted,
        exact: v !== undefined,
        glob: !quoted && v !== undefined && /[*?[]/.test(v),
        keeps: v === undefined || quoted,
      });
    } else if (t === 'CmdSubst') {
      substs.push(part);
      const v = env.substitute(children(part, 'Stmts'))?.replace(/\n+$/, '');
      out.push({
        text: v ?? '',
        split: !quoted,
        exact: v !== undefined,
        glob: false,
        keeps: v === undefined || quoted,
      });
    } else if (t === 'ProcSubst') {
      substs.push(part);
      out.push({ text: '/dev/fd/63', split: false, exact: false, glob: false, keeps: true });
    } else if (t === 'ExtGlob') {
      out.push({
        text: str(child(part, 'Pattern'), 'Value'),
        split: false,
        exact: true,
        glob: true,
        keeps: true,
      });
    } else {
      // Arithmetic and anything newer than this code: value unknown.
      out.push({ text: '', split: false, exact: false, glob: false, keeps: true });
    }
  });
  return out;
}

function fieldsOf(segs: Seg[], ifs: string): Field[] {
  const fields: Field[] = [];
  let cur = { value: '', exact: true, glob: false, live: false };
  const flush = () => {
    if (cur.live || cur.value !== '') fields.push({ value: cur.value, exact: cur.exact, glob: cur.glob });
    cur = { value: '', exact: true, glob: false, live: false };
  };
  for (const seg of segs) {
    if (seg.brk) {
      flush();
      continue;
    }
    if (!seg.exact) cur.exact = false;
    if (seg.keeps) cur.live = true;
    if (seg.glob) cur.glob = true;
    if (!seg.split || ifs === '') {
      cur.value += seg.text;
      continue;
    }
    const pieces = seg.text.split(new RegExp(`[${ifs.replace(/[\]\\^-]/g, '\\$&')}]+`));
    pieces.forEach((piece, i) => {
      if (i > 0) flush();
      cur.value += piece;
    });
  }
  flush();
  return fields;
}

/** Every brace alternative of the word, as lists of parts (literals replaced by synthetic ones). */
function braceAlternatives(parts: ShNode[]): { alts: ShNode[][]; truncated: boolean } {
  let alts: ShNode[][] = [[]];
  let truncated = false;
  for (const part of parts) {
    const raw = nodeType(part) === 'Lit' ? str(part, 'Value') : '';
    const options = raw.includes('{') ? expandBraces(raw) : [raw];
    // A cut-off range ({1..1000}) only hides more values of the same shape; a cut-off list
    // ({a,b,…,/}) can hide anything.
    const list = /\{[^}]*,/.test(raw);
    if (options.length >= MAX_BRACE_ALTERNATIVES && list) truncated = true;
    if (options.length <= 1 && options[0] === raw) {
      for (const alt of alts) alt.push(part);
      continue;
    }
    const next: ShNode[][] = [];
    for (const alt of alts) {
      for (const option of options) {
        const lit: ShNode = { Value: option };
        markSynthetic(lit);
        next.push([...alt, lit]);
      }
    }
    if (next.length > MAX_BRACE_ALTERNATIVES && (list || alts.some((a) => a.some((p) => isSynthetic(p)))))
      truncated = true;
    alts = next.slice(0, MAX_BRACE_ALTERNATIVES);
  }
  return { alts, truncated };
}

function ifsOf(env: ExpandEnv): string {
  return env.lookup('IFS') ?? ' \t\n';
}

export function expandWord(word: ShNode, env: ExpandEnv): ExpandedWord {
  const substs: ShNode[] = [];
  const parts = children(word, 'Parts');
  const hasBrace = parts.some((p) => nodeType(p) === 'Lit' && str(p, 'Value').includes('{'));
  const braces = hasBrace ? braceAlternatives(parts) : { alts: [parts], truncated: false };
  const fields: Field[] = [];
  for (const alt of braces.alts)
    fields.push(...fieldsOf(segmentsOf(alt, env, substs, false, true), ifsOf(env)));
  // What was cut off is not known: one more field stands for it (never dropped silently).
  if (braces.truncated) fields.push({ value: '', exact: false, glob: false, truncated: true });
  return { fields, substs };
}

/** The here-document or here-string body, expanded when the delimiter was not quoted. */
export function heredocBody(redirect: ShNode, env: ExpandEnv): { text: string; exact: boolean } {
  const isWordHdoc = num(redirect, 'Op') === OP.wordHdoc;
  const word = isWordHdoc ? child(redirect, 'Word') : child(redirect, 'Hdoc');
  if (!word) return { text: '', exact: true };
  if (isWordHdoc) {
    const fields = expandWord(word, env).fields;
    return { text: `${fields.map((f) => f.value).join(' ')}\n`, exact: fields.every((f) => f.exact) };
  }
  const delimQuoted = children(child(redirect, 'Word'), 'Parts').some((p) => nodeType(p) !== 'Lit');
  if (delimQuoted)
    return {
      text: children(word, 'Parts')
        .map((p) => str(p, 'Value'))
        .join(''),
      exact: true,
    };
  const segs = segmentsOf(children(word, 'Parts'), env, [], true, false);
  return { text: segs.map((s) => s.text).join(''), exact: segs.every((s) => s.exact) };
}

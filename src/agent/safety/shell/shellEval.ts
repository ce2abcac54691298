import * as path from 'node:path';
import { children, nodeType, num, OP, type ShNode } from './shellParse.ts';
import { type ExpandEnv, decodeAnsiC, expandWord, heredocBody } from './shellExpand.ts';

// Computes what a small, side-effect-free pipeline prints (`echo …`, `printf …`, `base64 -d`, `rev`,
// `tr`, `xxd -r -p`, `pwd`) without running anything. That is how obfuscated commands such as
// `echo cm0gLXJmIC8= | base64 -d | sh` or `$(printf '\x72\x6d') -rf /` are seen for what they are.
// Anything else returns undefined: "cannot know".

const MAX_OUTPUT = 64 * 1024;

export interface EvalEnv extends ExpandEnv {
  readonly cwd: string | undefined;
}

function echo(args: string[]): string {
  let newline = true;
  let escapes = false;
  let i = 0;
  for (; i < args.length && /^-[neE]+$/.test(args[i] ?? ''); i++) {
    const opt = args[i] ?? '';
    if (opt.includes('n')) newline = false;
    if (opt.includes('e')) escapes = true;
    if (opt.includes('E')) escapes = false;
  }
  const text = args.slice(i).join(' ');
  return (escapes ? decodeAnsiC(text) : text) + (newline ? '\n' : '');
}

function printf(args: string[]): string | undefined {
  const format = args[0];
  if (format === undefined) return undefined;
  const values = args.slice(1);
  let out = '';
  let used = 0;
  do {
    let bad = false;
    out += format.replace(
      /%([-+ #0]*\d*(?:\.\d+)?)([sbdicxXo%])|\\(x[0-9a-fA-F]{1,2}|[0-7]{1,3}|.)/gs,
      (m, _flags, conv) => {
        if (m.startsWith('\\')) return decodeAnsiC(m);
        if (conv === '%') return '%';
        const v = values[used++] ?? '';
        if (conv === 's') return v;
        if (conv === 'b') return decodeAnsiC(v);
        if (conv === 'c') return v.slice(0, 1);
        const n = Number(v || 0);
        if (!Number.isFinite(n)) bad = true;
        if (conv === 'x') return Math.trunc(n).toString(16);
        if (conv === 'X') return Math.trunc(n).toString(16).toUpperCase();
        if (conv === 'o') return Math.trunc(n).toString(8);
        return String(Math.trunc(n));
      },
    );
    if (bad) return undefined;
  } while (used > 0 && used < values.length && out.length < MAX_OUTPUT);
  return out;
}

function expandSet(set: string): string {
  return decodeAnsiC(set).replace(/(.)-(.)/gs, (_m, a: string, b: string) => {
    let s = '';
    for (let c = a.charCodeAt(0); c <= b.charCodeAt(0) && s.length < 512; c++) s += String.fromCharCode(c);
    return s;
  });
}

function tr(args: string[], input: string): string | undefined {
  if (args[0] === '-d' && args.length === 2) {
    const del = new Set(expandSet(args[1] ?? ''));
    return [...input].filter((c) => !del.has(c)).join('');
  }
  if (args.length !== 2 || args.some((a) => a.startsWith('-'))) return undefined;
  const from = expandSet(args[0] ?? '');
  const to = expandSet(args[1] ?? '');
  if (to.length === 0) return undefined;
  return [...input]
    .map((c) => (from.includes(c) ? (to[from.indexOf(c)] ?? to[to.length - 1] ?? c) : c))
    .join('');
}

function base32Decode(text: string): string | undefined {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
  const clean = text.replace(/[\s=]+/g, '').toUpperCase();
  let bits = 0;
  let value = 0;
  const out: number[] = [];
  for (const c of clean) {
    const v = alphabet.indexOf(c);
    if (v === -1) return undefined;
    value = (value << 5) | v;
    bits += 5;
    if (bits >= 8) {
      out.push((value >>> (bits - 8)) & 0xff);
      bits -= 8;
    }
  }
  return Buffer.from(out).toString('utf8');
}

function run(argv: string[], stdin: string | undefined, env: EvalEnv): string | undefined {
  const prog = path.basename(argv[0] ?? '');
  const args = argv.slice(1);
  switch (prog) {
    case 'echo':
      return echo(args);
    case 'printf':
      return printf(args[0] === '--' ? args.slice(1) : args);
    case 'which':
    case 'type':
    case 'command': {
      // `$(which rm)` names the program it looks up; its directory does not matter to the policy.
      const names = args.filter((a) => !a.startsWith('-'));
      const lookup = prog !== 'command' || args.some((a) => /^-[vV]$/.test(a));
      return lookup && names.length === 1 ? `/usr/bin/${names[0]}\n` : undefined;
    }
    case 'pwd':
      return env.cwd === undefined ? undefined : `${env.cwd}\n`;
    case 'cat':
    case 'tee':
      return args.every((a) => a === '-') ? stdin : undefined;
    case 'base64':
    case 'basenc':
    case 'openssl': {
      // `openssl base64 -d`, `openssl enc -d -base64`, `basenc --base64 -d`, `base64 -d [file]`.
      if (prog === 'openssl' && !args.some((a) => /^-?(base64|a)$/.test(a))) return undefined;
      if (prog === 'basenc' && !args.includes('--base64')) return undefined;
      const data = stdin;
      if (data === undefined) return undefined;
      if (args.some((a) => /^-[a-zA-Z]*[dD]$|^--decode$/.test(a))) {
        return Buffer.from(data.replace(/\s+/g, ''), 'base64').toString('utf8');
      }
      return `${Buffer.from(data, 'utf8').toString('base64')}\n`;
    }
    case 'base32':
      if (stdin === undefined || !args.some((a) => /^-[a-zA-Z]*d$|^--decode$/.test(a))) return undefined;
      return base32Decode(stdin);
    case 'dirname':
    case 'basename':
    case 'realpath':
    case 'readlink': {
      const names = args.filter((a) => !a.startsWith('-'));
      if (names.length !== 1 || (prog === 'readlink' && !args.some((a) => /^-[a-z]*[fem]/.test(a))))
        return undefined;
      const name = names[0] as string;
      if (prog === 'dirname') return `${path.dirname(name)}\n`;
      if (prog === 'basename') return `${path.basename(name)}\n`;
      return env.cwd === undefined && !path.isAbsolute(name)
        ? undefined
        : `${path.resolve(env.cwd ?? '/', name)}\n`;
    }
    case 'rev':
      return stdin
        ?.split('\n')
        .map((l) => [...l].reverse().join(''))
        .join('\n');
    case 'tr':
      return stdin === undefined ? undefined : tr(args, stdin);
    case 'xxd':
      if (stdin === undefined || !args.includes('-r') || !args.some((a) => /^-(p|ps|plain)$/.test(a)))
        return undefined;
      return Buffer.from(stdin.replace(/[^0-9a-fA-F]/g, ''), 'hex').toString('utf8');
    default:
      return undefined;
  }
}

// A function, not a constant: OP is read on first use, never at import.
const isOutputOp = (op: number) => [OP.rdrOut, OP.appOut, OP.clbOut, OP.rdrAll, OP.appAll].includes(op);

function evalStmt(
  stmt: ShNode,
  env: EvalEnv,
  stdin: string | undefined,
  depth: number,
  ignoreOutputs = false,
): string | undefined {
  if (depth > 8 || stmt.Background === true) return undefined;
  let input = stdin;
  for (const r of children(stmt, 'Redirs')) {
    const op = num(r, 'Op');
    if (ignoreOutputs && isOutputOp(op)) continue;
    if (op !== OP.hdoc && op !== OP.dashHdoc && op !== OP.wordHdoc) return undefined;
    const body = heredocBody(r, env);
    if (!body.exact) return undefined;
    input = body.text;
  }
  const cmd = stmt.Cmd as ShNode | undefined;
  const t = nodeType(cmd);
  if (t === 'BinaryCmd') {
    const op = num(cmd, 'Op');
    if (op !== OP.pipe && op !== OP.pipeAll) return undefined;
    const left = evalStmt(cmd?.X as ShNode, env, input, depth + 1);
    if (left === undefined) return undefined;
    return evalStmt(cmd?.Y as ShNode, env, left, depth + 1);
  }
  if (t === 'Subshell' || t === 'Block') return staticOutput(children(cmd, 'Stmts'), env, input, depth + 1);
  if (t !== 'CallExpr' || children(cmd, 'Assigns').length > 0) return undefined;
  const argv: string[] = [];
  for (const word of children(cmd, 'Args')) {
    for (const f of expandWord(word, env).fields) {
      if (!f.exact || f.glob) return undefined;
      argv.push(f.value);
    }
  }
  const out = run(argv, input, env);
  return out !== undefined && out.length <= MAX_OUTPUT ? out : undefined;
}

/**
 * What `stmts` would print, when that is knowable without running anything. With `ignoreOutputs`,
 * what they would write through their own `>`/`>>` redirections (`echo … > x.sh`).
 */
export function staticOutput(
  stmts: ShNode[],
  env: EvalEnv,
  stdin?: string,
  depth = 0,
  ignoreOutputs = false,
): string | undefined {
  if (stmts.length === 0) return undefined;
  let out = '';
  for (const stmt of stmts) {
    const part = evalStmt(stmt, env, stdin, depth, ignoreOutputs);
    if (part === undefined) return undefined;
    out += part;
  }
  return out;
}

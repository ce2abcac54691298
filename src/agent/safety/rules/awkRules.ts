import type { Arg, RuleContext } from './commandTypes.ts';
import { judgePathUse } from './outsidePaths.ts';
import { judgeWrite } from './pathRules.ts';
import { lit } from './programRules.ts';

// awk is a programming language: its program text can write files (`print > "f"`), run commands
// (`system()`, `print | "cmd"`, `"cmd" | getline`), read files (`getline < "f"`) and, in gawk, open
// network connections ("/inet/tcp/…"). The program is scanned the way awk reads it — strings and
// regex literals set aside, statements split — and each effect is judged: targets that are literals
// are judged as paths; targets computed at run time need approval.

interface Scanned {
  /** The program with every string literal replaced by `\u0001<index>\u0001`, regexes by `//`. */
  readonly skeleton: string;
  readonly strings: readonly string[];
}

const STRING_MARK = /^\u0001(\d+)\u0001$/;
/** After these, a `/` starts a regex literal rather than a division. */
const REGEX_CONTEXT = /(^|[(,{};!~&|?:=\n]|\b(print|printf|return|in))\s*$/;

function scan(code: string): Scanned {
  const strings: string[] = [];
  let skeleton = '';
  for (let i = 0; i < code.length; i++) {
    const c = code[i] as string;
    if (c === '"') {
      let value = '';
      for (i++; i < code.length && code[i] !== '"'; i++) {
        if (code[i] === '\\' && i + 1 < code.length) {
          const next = code[++i] as string;
          value += next === 'n' ? '\n' : next === 't' ? '\t' : next;
        } else value += code[i];
      }
      skeleton += `\u0001${strings.length}\u0001`;
      strings.push(value);
    } else if (c === '#') {
      while (i < code.length && code[i] !== '\n') i++;
      skeleton += '\n';
    } else if (c === '/' && REGEX_CONTEXT.test(skeleton)) {
      for (i++; i < code.length && code[i] !== '/' && code[i] !== '\n'; i++) if (code[i] === '\\') i++;
      skeleton += '//';
    } else skeleton += c;
  }
  return { skeleton, strings };
}

/** Top-level (outside parentheses) occurrences of an operator in a statement. */
function topLevel(statement: string, op: RegExp): { index: number; match: string }[] {
  const out: { index: number; match: string }[] = [];
  let depth = 0;
  for (let i = 0; i < statement.length; i++) {
    const c = statement[i];
    if (c === '(' || c === '[') depth++;
    else if (c === ')' || c === ']') depth--;
    else if (depth === 0) {
      const m = op.exec(statement.slice(i));
      if (m && m.index === 0) {
        out.push({ index: i, match: m[0] });
        i += m[0].length - 1;
      }
    }
  }
  return out;
}

function literal(expr: string, strings: readonly string[]): string | undefined {
  const m = STRING_MARK.exec(expr.trim());
  return m ? strings[Number(m[1])] : undefined;
}

/** Judges an awk program text for the files it writes/reads, the commands it runs, the network. */
export function judgeAwkProgram(program: string, code: string, rc: RuleContext): void {
  const { skeleton, strings } = scan(code);
  if (strings.some((s) => /^\/inet[46]?\//.test(s))) {
    rc.add({
      class: 'network',
      risk: 'high',
      program,
      reason: `${program} opens a network connection (/inet/…)`,
      fetches: true,
    });
  }
  if (/@load\b/.test(skeleton)) {
    rc.add({ class: 'unknown', risk: 'high', program, reason: `${program} loads a compiled extension` });
  }
  for (const statement of skeleton.split(/[;{}\n]/)) {
    if (/\bprintf?\b/.test(statement)) {
      for (const { index, match } of topLevel(statement, /^(>>|>|\|&|\|(?!\|))/)) {
        const target = statement.slice(index + match.length);
        const value = literal(target, strings);
        if (match === '>' || match === '>>') {
          if (value !== undefined)
            judgeWrite(program, lit(value), match === '>>' ? 'append' : 'overwrite', rc);
          else
            rc.add({
              class: 'unknown',
              risk: 'high',
              program,
              reason: `${program} writes to a file whose name is computed at run time`,
            });
        } else if (value !== undefined && !/^\/inet[46]?\//.test(value)) {
          rc.nested(value, { via: `${program} pipe`, stdin: { kind: 'pipe', network: false } });
          rc.add({ class: 'unknown', risk: 'high', program, reason: `${program} pipes output to a command` });
        } else if (value === undefined) {
          rc.add({
            class: 'unknown',
            risk: 'high',
            program,
            reason: `${program} pipes output to a command computed at run time`,
          });
        }
      }
    }
    // `getline < "f"` reads a file; `cmd | getline` runs one.
    for (const { index } of [...statement.matchAll(/\bgetline\b/g)].map((m) => ({ index: m.index ?? 0 }))) {
      const after = /^getline\s*(?:[A-Za-z_]\w*(?:\[[^\]]*\])?)?\s*<\s*([^\s)]+)/.exec(
        statement.slice(index),
      );
      if (after) {
        const file = literal(after[1] as string, strings);
        if (file !== undefined && file !== '-') judgePathUse(file, `${program} getline reads`, program, rc);
        else if (file === undefined)
          rc.add({
            class: 'unknown',
            risk: 'medium',
            program,
            reason: `${program} reads a file whose name is computed at run time`,
          });
      }
      const before = statement.slice(0, index);
      const pipe = /(\|&?)\s*$/.exec(before);
      if (pipe) {
        const cmd = literal(before.slice(0, pipe.index).split(/[=(,]/).pop() ?? '', strings);
        if (cmd !== undefined && !/^\/inet[46]?\//.test(cmd)) rc.nested(cmd, { via: `${program} getline` });
        rc.add({
          class: 'unknown',
          risk: 'high',
          program,
          reason: `${program} runs a command and reads its output`,
        });
      }
    }
    const system = /\bsystem\s*\(\s*([^)]*)\)/.exec(statement);
    if (system) {
      const cmd = literal(system[1] as string, strings);
      if (cmd !== undefined) rc.nested(cmd, { via: `${program} system()` });
      rc.add({ class: 'unknown', risk: 'high', program, reason: `${program} runs commands with system()` });
    }
  }
  for (const s of strings)
    if (/^(\/|~\/)/.test(s) && !/\s/.test(s)) judgePathUse(s, `${program} code names`, program, rc);
}

/** gawk's options: -i inplace edits files, -l loads an extension, -e adds program text. */
export function awkOptions(
  program: string,
  args: readonly Arg[],
  rc: RuleContext,
): { code: Arg[]; fromFile: boolean } {
  const code: Arg[] = [];
  let fromFile = false;
  for (let i = 0; i < args.length; i++) {
    const v = (args[i] as Arg).value;
    if (v === '--') break;
    const m = /^(-[ilefEvFW]|--(include|load|source|file|exec|assign|field-separator))(?:=(.*))?$/.exec(v);
    if (!m) {
      if (!v.startsWith('-') || v === '-') break;
      continue;
    }
    const value = m[3] ?? args[++i]?.value ?? '';
    const opt = m[1] as string;
    if (opt === '-i' || opt === '--include') {
      if (/(^|\/)inplace(\.awk)?$/.test(value))
        rc.add({
          class: 'destructive',
          risk: 'medium',
          program: `${program} -i inplace`,
          reason: `${program} -i inplace edits files in place, bypassing review`,
          suggestion: 'Use Edit or MultiEdit to change files.',
          sessionKey: `destructive:${program} -i inplace`,
        });
    } else if (opt === '-l' || opt === '--load')
      rc.add({ class: 'unknown', risk: 'high', program, reason: `${program} loads the extension ${value}` });
    else if (opt === '-e' || opt === '--source') code.push({ ...(args[i] as Arg), value });
    else if (opt === '-f' || opt === '--file' || opt === '-E' || opt === '--exec') fromFile = true;
  }
  return { code, fromFile };
}

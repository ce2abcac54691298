import type { Arg, RuleContext } from './commandTypes.ts';
import { judgeDynamicScript, judgeInlineCode, judgeScriptFile, judgeStdinProgram } from './codeRules.ts';
import { lit, type Recurse, type Rule, safe } from './programRules.ts';

// Interpreters (python, node, ruby, perl, php, …): inline code (-c/-e) is judged by what it reaches
// for, a script file is the project's code, stdin is judged like a shell's, and a few flags change
// what runs (python -m http.server, php -S, perl -i, ruby -run).

const INLINE_FLAGS: Record<string, RegExp> = {
  python: /^-c$/,
  node: /^(-e|--eval|-p|--print)$/,
  ruby: /^-e$/,
  perl: /^-[a-zA-Z]*[eE]$/,
  php: /^-r$/,
  lua: /^-e$/,
  Rscript: /^-e$/,
  osascript: /^-e$/,
  pwsh: /^-(c|Command|EncodedCommand|e|ec)$/i,
  awk: /^$/,
  // Other languages whose command line takes a program text.
  expect: /^-c$/,
  guile: /^-c$/,
  racket: /^-e$/,
  sbcl: /^--eval$/,
  R: /^-e$/,
  octave: /^--eval$/,
  elixir: /^(-e|--eval)$/,
  erl: /^-eval$/,
  ghc: /^-e$/,
  swift: /^-e$/,
  scala: /^-e$/,
  groovy: /^-e$/,
  clojure: /^-e$/,
  bb: /^-e$/,
  tsx: /^(-e|--eval|-p|--print)$/,
  'ts-node': /^(-e|--eval|-p|--print)$/,
  'babel-node': /^(-e|--eval|-p|--print)$/,
  coffee: /^(-e|--eval)$/,
  deno: /^eval$/,
  bun: /^(-e|--eval|-p|--print)$/,
};

/** Flags that only print information (`python3 --version`): nothing runs. */
const INFO_FLAG = /^(--version|-V|--help|-h|-v|-version)$/;
const INTERP_VALUED: Record<string, string[]> = {
  python: ['-W', '-X', '-Q'],
  node: [
    '-r',
    '--require',
    '--import',
    '--loader',
    '--input-type',
    '--experimental-loader',
    '--env-file',
    '--conditions',
    '-C',
  ],
  ruby: ['-I', '-r', '-E'],
  perl: ['-I', '-M', '-m'],
  php: ['-d', '-c', '-z'],
};

export const interpreterRule =
  (recurse: Recurse): Rule =>
  (program, args, rc) => {
    const inline = INLINE_FLAGS[program] ?? /^-e$/;
    const valued = INTERP_VALUED[program] ?? [];
    // Libraries loaded with -r/-M/-m are part of the program: `ruby -run -e httpd .` serves files.
    const modules: string[] = [];
    for (let i = 0; i < args.length; i++) {
      const a = args[i] as Arg;
      const v = a.value;
      if (inline.test(v)) {
        const code = args[i + 1];
        if (!code) return safe(rc, program);
        if (!code.exact) return judgeDynamicScript(`${program} ${v}`, code, rc);
        if (program === 'ruby' && modules.includes('un'))
          return rubyUn(code.value, args.slice(i + 2), rc, recurse);
        const loads = modules.map((m) => `require ${m}\n`).join('');
        return judgeInlineCode(program, loads + code.value, rc);
      }
      const attached = /^-([rMm])([^-].*)$/.exec(v);
      if (attached && ((program === 'ruby' && attached[1] === 'r') || program === 'perl')) {
        modules.push((attached[2] as string).replace(/[=\s].*$/, ''));
        continue;
      }
      if (program === 'perl' && /^-[a-zA-Z]*i/.test(v)) {
        return rc.add({
          class: 'destructive',
          risk: 'medium',
          program: 'perl -i',
          reason: 'edits files in place',
          suggestion: 'Use Edit to change files.',
        });
      }
      if (program === 'python' && v === '-m') {
        const mod = args[i + 1]?.value ?? '';
        if (mod === 'pip') return recurse([lit('pip'), ...args.slice(i + 2)], rc);
        if (
          /^(http\.server|SimpleHTTPServer|smtpd|ftplib|pydoc)$/.test(mod) &&
          !args.some((a) => /^(127\.|localhost$|::1$)/.test(a.value))
        )
          return rc.add({
            class: 'network',
            risk: 'medium',
            program: `${program} -m ${mod}`,
            reason: `serves the workspace to the network`,
            sessionKey: `network:${program} -m ${mod}`,
          });
        return safe(rc, `${program} -m ${mod}`);
      }
      if (program === 'php' && v === '-S' && !/^(127\.|localhost[:]|\[::1\])/.test(args[i + 1]?.value ?? ''))
        return rc.add({
          class: 'network',
          risk: 'medium',
          program: 'php -S',
          reason: 'serves the workspace to the network',
          sessionKey: 'network:php -S',
        });
      if (program === 'node' && /^--(test|version|check|help|run)$|^-[vhc]$/.test(v))
        return safe(rc, program);
      if (valued.includes(v)) {
        if (/^(-[rMm]|--require)$/.test(v)) modules.push(args[i + 1]?.value ?? '');
        i++;
        continue;
      }
      if (v === '-') return judgeStdinProgram(program, false, rc);
      if (!v.startsWith('-')) return judgeScriptFile(program, a, rc);
    }
    // Only flags, and one of them just asks for the version or help: nothing runs.
    if (args.some((a) => INFO_FLAG.test(a.value))) return safe(rc, program);
    judgeStdinProgram(program, false, rc);
  };

/**
 * Runtimes that double as package managers (deno, bun) evaluate code given on the command line
 * (`deno eval …`, `bun -e …`): that code is judged like node -e. Returns whether it applied.
 */
export function runtimeEval(program: string, args: readonly Arg[], rc: RuleContext): boolean {
  const inline = INLINE_FLAGS[program];
  const at = inline ? args.findIndex((a) => inline.test(a.value)) : -1;
  if (at === -1 || (program === 'deno' && at !== 0)) return false;
  const code = args[at + 1];
  if (!code) safe(rc, program);
  else if (!code.exact) judgeDynamicScript(`${program} ${(args[at] as Arg).value}`, code, rc);
  else judgeInlineCode(program, code.value, rc);
  return true;
}

// ruby's `un` library: `ruby -run -e rm_rf -- dir` is rm -rf, `-e httpd` a web server.
const RUBY_UN: Record<string, string[]> = {
  cp: ['cp'],
  ln: ['ln'],
  mv: ['mv'],
  rm: ['rm'],
  rm_f: ['rm', '-f'],
  rm_r: ['rm', '-r'],
  rm_rf: ['rm', '-rf'],
  mkdir: ['mkdir'],
  rmdir: ['rmdir'],
  install: ['install'],
  chmod: ['chmod'],
  touch: ['touch'],
};

function rubyUn(code: string, rest: readonly Arg[], rc: RuleContext, recurse: Recurse): void {
  const name = code.trim();
  const operands = rest[0]?.value === '--' ? rest.slice(1) : rest;
  const mapped = RUBY_UN[name];
  if (mapped) {
    recurse([...mapped.map((w) => lit(w)), ...operands], rc);
    return;
  }
  if (name === 'httpd') {
    rc.add({
      class: 'network',
      risk: 'medium',
      program: 'ruby -run -e httpd',
      reason: 'serves the workspace to the network',
      sessionKey: 'network:ruby httpd',
    });
    return;
  }
  judgeInlineCode('ruby', `require un\n${code}`, rc);
}

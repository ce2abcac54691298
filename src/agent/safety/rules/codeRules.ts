import * as path from 'node:path';
import { type Arg, parseOpts, type RuleContext } from './commandTypes.ts';
import { resolvePath } from './pathRules.ts';
import { awkOptions, judgeAwkProgram } from './awkRules.ts';
import { judgeCodePaths } from './outsidePaths.ts';
import { judgeScriptOnDisk } from './scriptRules.ts';
import { interactive, lit, type Rule, safe } from './programRules.ts';

// Commands that run code given as text: shells (-c, scripts, stdin), interpreters (-c/-e), eval,
// source, trap, alias, awk. Shell text is parsed and classified recursively; other languages are
// judged by what their code reaches for (processes, files, network, hidden code).

const CAPABILITIES: readonly [string, RegExp][] = [
  [
    'run programs',
    /\b(system|popen|spawn\w*|exec\w*|fork|Popen|call|check_output|getoutput|subprocess|child_process|Runtime|ProcessBuilder|shell_exec|passthru|proc_open)\b|`/,
  ],
  [
    'delete files',
    /\b(rmtree|unlink\w*|rmdir\w*|remove\w*|rmSync|rm|rm_rf|rm_r|delete|truncate|shutil|removedirs|FileUtils)\b/,
  ],
  [
    'write files',
    /\b(writeFile\w*|appendFile\w*|createWriteStream|write_text|write_bytes|file_put_contents|fwrite|chmod|chown|rename\w*|symlink\w*|linkSync|hardlink_to|symlink_to)\b|open\s*\([^)]*,\s*(?:mode\s*=\s*)?['"][rbt]*[wax+]/,
  ],
  [
    'use the network',
    /\b(socket|https?|urllib\d?|requests|fetch|urlopen|XMLHttpRequest|WebSocket|dns|ftplib|smtplib|paramiko|net|curl|LWP|Socket|axios|undici|httpd|HTTPServer|TCPServer|UDPServer|WEBrick|createServer|socketserver|getprint|getstore)\b/,
  ],
  [
    'decode and run hidden code',
    /\b(eval|exec|compile|__import__|importlib|b64decode|base64|atob|Function|getattr|fromCharCode|decode|marshal|pickle)\b/,
  ],
];

// `system("…")`, `exec "…"` (perl/ruby need no parentheses), `popen(…)`, `%x{…}`, `qx{…}`.
const SHELL_CALL =
  /(?:system|popen|execSync|exec|execFileSync|spawnSync|spawn|execFile|check_output|check_call|call|run|Popen|getoutput|getstatusoutput|shell_exec|passthru|proc_open|execute|open3|capture2e?|capture3)\s*\(?\s*(["'`])((?:\\.|(?!\1).)*)\1/g;
// The argv-list form: `subprocess.run(['rm', '-rf', '/'])`, `spawnSync('rm', ['-rf', '/'])`.
const ARGV_CALL =
  /(?:system|exec\w*|spawn\w*|check_output|check_call|call|run|Popen|execFile\w*)\s*\(\s*((?:\[\s*)?(?:(["'])(?:\\.|(?!\2).)*\2\s*,?\s*\[?\s*)+)/g;

function quotedStrings(text: string): string[] {
  return [...text.matchAll(/(["'])((?:\\.|(?!\1).)*)\1/g)].map((m) => (m[2] ?? '').replace(/\\(.)/g, '$1'));
}

/** Inline code for another language: judged by the capabilities it reaches for. */
export function judgeInlineCode(language: string, code: string, rc: RuleContext): void {
  if (language === 'awk') {
    judgeAwkProgram(language, code, rc);
    return;
  }
  // `open('/home/u/.secret')`: a path literal is judged like a path argument.
  judgeCodePaths(language, code, rc);
  for (const match of code.matchAll(SHELL_CALL)) rc.nested(match[2] ?? '', { via: `${language} shell call` });
  for (const match of code.matchAll(ARGV_CALL)) {
    const argv = quotedStrings(match[1] ?? '');
    if (argv.length > 1)
      rc.nested(argv.map((a) => `'${a.replace(/'/g, "'\\''")}'`).join(' '), {
        via: `${language} process call`,
      });
  }
  for (const match of code.matchAll(/`([^`]+)`|%x\{([^}]*)\}|qx\{([^}]*)\}|qx\(([^)]*)\)/g)) {
    if (/^(perl|ruby|php|awk)$/.test(language))
      rc.nested(match[1] ?? match[2] ?? match[3] ?? match[4] ?? '', { via: `${language} backticks` });
  }
  const caps = CAPABILITIES.filter(([, re]) => re.test(code)).map(([name]) => name);
  if (caps.length === 0) {
    safe(rc, language, `inline ${language} code with no file, process or network access`);
    return;
  }
  const network = caps.includes('use the network');
  if (network && caps.includes('run programs')) {
    // Fetching and running in one program is `curl … | sh` in another language.
    rc.add({
      class: 'never',
      risk: 'high',
      program: language,
      reason: `inline ${language} code that fetches from the network and runs programs`,
    });
    return;
  }
  rc.add({
    class: network ? 'network' : 'unknown',
    risk: caps.includes('decode and run hidden code') || caps.includes('run programs') ? 'high' : 'medium',
    program: language,
    reason: `inline ${language} code that can ${caps.join(', ')}`,
    // `python -c "…urlopen…" | sh` pipes the network into a shell just like curl does.
    ...(network ? { fetches: true } : {}),
  });
}

/** A shell or interpreter reading its program from stdin. */
export function judgeStdinProgram(language: string, isShell: boolean, rc: RuleContext): void {
  const { stdin } = rc;
  if (stdin.network) {
    rc.add({
      class: 'never',
      risk: 'high',
      program: language,
      reason: `pipes content from the network into ${language}`,
    });
    return;
  }
  if (stdin.kind === 'none') {
    rc.add({
      class: 'interactive',
      risk: 'low',
      program: language,
      reason: `${language} without a script starts an interactive session`,
      suggestion: `Pass a script file or use ${isShell ? `${language} -c "…"` : 'a script file'}.`,
    });
    return;
  }
  if (stdin.kind === 'file') {
    // `sh < x.sh` runs x.sh exactly as `sh x.sh` does, and is judged the same way.
    if (stdin.path) judgeScriptFile(language, lit(stdin.path), rc);
    else
      rc.add({
        class: 'unknown',
        risk: 'high',
        program: language,
        reason: `${language} runs a script read from a file that is not known in advance`,
      });
    return;
  }
  if (stdin.content === undefined && stdin.path) {
    // `cat x.sh | sh` is `sh x.sh`.
    judgeScriptFile(language, lit(stdin.path), rc);
    return;
  }
  if (stdin.content !== undefined) {
    if (isShell) rc.nested(stdin.content, { via: `script piped into ${language}` });
    else judgeInlineCode(language, stdin.content, rc);
    return;
  }
  rc.add({
    class: 'unknown',
    risk: 'high',
    program: language,
    reason: `runs ${language} code produced at run time by another command`,
  });
}

/** A script whose text is computed at run time (sh -c "$X", eval "$(…)"). */
export function judgeDynamicScript(via: string, script: Arg, rc: RuleContext): void {
  if (rc.substsFetch(script.substs)) {
    rc.add({
      class: 'never',
      risk: 'high',
      program: via,
      reason: `${via} runs code downloaded from the network`,
    });
    return;
  }
  // The worst case takes unknown parts as empty: `sh -c "rm -rf /$X"` is still `rm -rf /`.
  rc.nested(script.value, { via });
  rc.add({ class: 'unknown', risk: 'high', program: via, reason: `${via} runs a script built at run time` });
}

const SHELL_VALUED = new Set(['-o', '+o', '-O', '+O', '--rcfile', '--init-file']);

export const shellRule: Rule = (program, args, rc) => {
  let command = false;
  let readStdin = false;
  let i = 0;
  for (; i < args.length; i++) {
    const v = (args[i] as Arg).value;
    if (v === '--' || v === '-') {
      i++;
      break;
    }
    if (!/^[-+]/.test(v)) break;
    if (SHELL_VALUED.has(v)) {
      i++;
      continue;
    }
    if (/^-[a-zA-Z]*c/.test(v)) command = true;
    if (/^-[a-zA-Z]*s/.test(v)) readStdin = true;
    if (/^-[a-zA-Z]*i/.test(v)) {
      interactive('-i starts an interactive shell')(program, args, rc);
      return;
    }
  }
  const operands = args.slice(i);
  if (command) {
    const script = operands[0];
    if (!script) return safe(rc, program);
    const positional = operands.slice(1).map((a) => a.value);
    if (script.exact)
      rc.nested(script.value, {
        via: `${program} -c`,
        positional: positional.length ? positional : [program],
        stdin: rc.stdin,
      });
    else judgeDynamicScript(`${program} -c`, script, rc);
    return;
  }
  const file = operands[0];
  if (readStdin || !file || file.value === '/dev/stdin') return judgeStdinProgram(program, true, rc);
  judgeScriptFile(program, file, rc);
};

/** Runs the text of a script (shell text is parsed; other languages judged as inline code). */
function judgeScriptText(program: string, text: string, via: string, rc: RuleContext): void {
  const shebang = /^#!\s*(?:\S*\/env\s+(?:-S\s+)?)?(\S+)/.exec(text)?.[1];
  const language = shebang ? path.basename(shebang) : program;
  const sameShell = program === 'source' || program === '.';
  if (sameShell) rc.nested(text, { via, sameShell });
  else if (/^((ba|z|da|k|mk)?sh)$/.test(language)) rc.nested(text, { via });
  else judgeInlineCode(language.replace(/[\d.]+$/, ''), text, rc);
}

/** A file this command line wrote before running it: judged by what was written. */
export function judgeWrittenFile(program: string, abs: string, rc: RuleContext): boolean {
  const written = rc.written(abs);
  if (!written) return false;
  if (written.content !== undefined) {
    judgeScriptText(program, written.content, `${path.basename(abs)}, written earlier in this command`, rc);
    return true;
  }
  rc.add({
    class: 'unknown',
    risk: 'high',
    program,
    reason: `runs ${path.basename(abs)}, written earlier in this command with content that cannot be known`,
  });
  return true;
}

export function judgeScriptFile(program: string, file: Arg, rc: RuleContext): void {
  if (file.substs.length > 0) {
    const text = rc.substOutput(file.substs);
    if (text !== undefined && !file.exact && file.value === '/dev/fd/63') {
      // `bash <(echo … | base64 -d)`: the script is what the substitution prints.
      judgeScriptText(program, text, `script produced by a substitution`, rc);
      return;
    }
    if (rc.substsFetch(file.substs)) {
      rc.add({
        class: 'never',
        risk: 'high',
        program,
        reason: `${program} runs a script downloaded from the network`,
      });
    } else {
      rc.add({
        class: 'unknown',
        risk: 'high',
        program,
        reason: `${program} runs a script produced by another command`,
      });
    }
    return;
  }
  const abs = resolvePath(file.value, rc);
  if (abs && !rc.isDownloaded(abs) && judgeWrittenFile(program, abs, rc)) return;
  if (abs && rc.isDownloaded(abs)) {
    rc.add({
      class: 'never',
      risk: 'high',
      program,
      reason: `${program} runs ${file.value}, downloaded from the network in the same command`,
    });
    return;
  }
  if (/^(https?|ftp):\/\//.test(file.value)) {
    rc.add({
      class: 'network',
      risk: 'high',
      program,
      reason: `${program} runs a script from ${file.value}`,
      fetches: true,
    });
    return;
  }
  const sameShell = program === 'source' || program === '.';
  const read =
    abs && /^((ba|z|da|k|mk)?sh|source|\.)$/.test(program) && judgeScriptOnDisk(abs, rc, false, sameShell);
  // A sourced file that could not be read may set any variable.
  if (sameShell && !read) rc.forgetVars();
  safe(rc, program, 'runs a script file');
}

export const awkRule: Rule = (program, args, rc) => {
  const opts = parseOpts(args, {
    valued: 'fvFWileE',
    longValued: ['--file', '--assign', '--field-separator', '--include', '--load', '--source', '--exec'],
  });
  const { code, fromFile } = awkOptions(program, args, rc);
  // The program is -e/--source text, or else the first operand (unless it comes from -f FILE).
  const texts = code.length > 0 ? code : fromFile ? [] : opts.operands.slice(0, 1);
  if (texts.length === 0) return safe(rc, program);
  for (const text of texts) {
    if (!text.exact) judgeDynamicScript(program, text, rc);
    else judgeAwkProgram(program, text.value, rc);
  }
  safe(rc, program);
};

export function aliasRule(): Rule {
  return (program, args, rc) => {
    for (const a of args) {
      const eq = a.value.indexOf('=');
      if (eq > 0) rc.nested(a.value.slice(eq + 1), { via: 'alias' });
    }
    safe(rc, program);
  };
}

export const trapRule: Rule = (program, args, rc) => {
  const opts = parseOpts(args, { permute: false });
  const action = opts.operands[0];
  if (!action || opts.operands.length < 2 || action.value === '-' || action.value === '')
    return safe(rc, program);
  if (action.exact) rc.nested(action.value, { via: 'trap' });
  else judgeDynamicScript('trap', action, rc);
};

export const evalRule: Rule = (program, args, rc) => {
  if (args.length === 0) return safe(rc, program);
  const joined: Arg = {
    value: args.map((a) => a.value).join(' '),
    exact: args.every((a) => a.exact),
    glob: false,
    substs: args.flatMap((a) => a.substs),
  };
  if (joined.exact) rc.nested(joined.value, { via: 'eval', stdin: rc.stdin, sameShell: true });
  else {
    judgeDynamicScript('eval', joined, rc);
    rc.forgetVars();
  }
};

export const sourceRule: Rule = (program, args, rc) => {
  const file = args[0];
  if (!file) return safe(rc, program);
  if (file.value === '/dev/stdin' || file.value === '-') return judgeStdinProgram(program, true, rc);
  judgeScriptFile(program, file, rc);
  if (!file.exact || file.substs.length > 0) rc.forgetVars();
};

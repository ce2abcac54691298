import * as fs from 'node:fs';
import * as path from 'node:path';
import { type Arg, type FindingInput, parseOpts, type RuleContext, words } from './commandTypes.ts';
import { judgeCopy, judgeDd, judgeDelete, judgePermissions, judgeWrite, resolvePath } from './pathRules.ts';
import {
  gitRule,
  httpClient,
  lister,
  lit,
  network,
  npxRule,
  packageManager,
  type Rule,
  reader,
  rsyncRule,
  searcher,
  socketTool,
  sshRule,
  systemPackages,
} from './programRules.ts';

// Classifies one simple command (argv after expansion). Wrappers that run another command (env,
// timeout, xargs, sh -c, eval, find -exec …) are unwrapped, so what is judged is what would run.

function safe(rc: RuleContext, program: string, reason = 'ordinary command'): void {
  rc.add({ class: 'safe', risk: 'low', program, reason });
}

const never =
  (what: string): Rule =>
  (program, _args, rc) =>
    rc.add({ class: 'never', risk: 'high', program, reason: `${program} ${what}` });

const interactive =
  (
    what: string,
    suggestion = 'Interactive programs cannot run here (stdin is closed); use a non-interactive form.',
  ): Rule =>
  (program, _args, rc) =>
    rc.add({ class: 'interactive', risk: 'low', program, reason: `${program} ${what}`, suggestion });

// ---------- running code: shells, interpreters, eval ----------

const CAPABILITIES: readonly [string, RegExp][] = [
  [
    'run programs',
    /\b(system|popen|spawn\w*|exec\w*|fork|Popen|call|check_output|getoutput|subprocess|child_process|Runtime|ProcessBuilder|shell_exec|passthru|proc_open)\b|`/,
  ],
  ['delete files', /\b(rmtree|unlink\w*|rmdir\w*|remove|rmSync|rm|truncate|shutil|removedirs|FileUtils)\b/],
  [
    'write files',
    /\b(writeFile\w*|appendFile\w*|createWriteStream|write_text|write_bytes|file_put_contents|fwrite|chmod|chown|rename\w*)\b|open\s*\([^)]*['"][wax+]/,
  ],
  [
    'use the network',
    /\b(socket|https?|urllib\d?|requests|fetch|urlopen|XMLHttpRequest|WebSocket|dns|ftplib|smtplib|paramiko|net|curl|LWP|Socket|axios|undici)\b/,
  ],
  [
    'decode and run hidden code',
    /\b(eval|exec|compile|__import__|importlib|b64decode|base64|atob|Function|getattr|fromCharCode|decode|marshal|pickle)\b/,
  ],
];

const SHELL_CALL =
  /(?:system|popen|execSync|exec|spawnSync|check_output|check_call|call|run|Popen|getoutput|getstatusoutput|shell_exec|passthru)\s*\(\s*(?:\[\s*)?(["'`])((?:\\.|(?!\1).)*)\1/g;

/** Inline code for another language: judged by the capabilities it reaches for. */
function judgeInlineCode(language: string, code: string, rc: RuleContext): void {
  for (const match of code.matchAll(SHELL_CALL)) rc.nested(match[2] ?? '', { via: `${language} shell call` });
  for (const match of code.matchAll(/`([^`]+)`/g)) {
    if (/^(perl|ruby|php|awk)$/.test(language)) rc.nested(match[1] ?? '', { via: `${language} backticks` });
  }
  const caps = CAPABILITIES.filter(([, re]) => re.test(code)).map(([name]) => name);
  if (caps.length === 0) {
    safe(rc, language, `inline ${language} code with no file, process or network access`);
    return;
  }
  rc.add({
    class: caps.includes('use the network') ? 'network' : 'unknown',
    risk: caps.includes('decode and run hidden code') || caps.includes('run programs') ? 'high' : 'medium',
    program: language,
    reason: `inline ${language} code that can ${caps.join(', ')}`,
  });
}

/** A shell or interpreter reading its program from stdin. */
function judgeStdinProgram(language: string, isShell: boolean, rc: RuleContext): void {
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
    safe(rc, language, 'runs a script file');
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
function judgeDynamicScript(via: string, script: Arg, rc: RuleContext): void {
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

const shellRule: Rule = (program, args, rc) => {
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
      });
    else judgeDynamicScript(`${program} -c`, script, rc);
    return;
  }
  const file = operands[0];
  if (readStdin || !file || file.value === '/dev/stdin') return judgeStdinProgram(program, true, rc);
  judgeScriptFile(program, file, rc);
};

function judgeScriptFile(program: string, file: Arg, rc: RuleContext): void {
  if (file.substs.length > 0) {
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
  safe(rc, program, 'runs a script file');
}

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
};
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

const interpreterRule =
  (recurse: (argv: readonly Arg[], rc: RuleContext) => void): Rule =>
  (program, args, rc) => {
    const inline = INLINE_FLAGS[program] ?? /^-e$/;
    const valued = INTERP_VALUED[program] ?? [];
    for (let i = 0; i < args.length; i++) {
      const a = args[i] as Arg;
      const v = a.value;
      if (inline.test(v)) {
        const code = args[i + 1];
        if (!code) return safe(rc, program);
        if (!code.exact) return judgeDynamicScript(`${program} ${v}`, code, rc);
        return judgeInlineCode(program, code.value, rc);
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
        return safe(rc, `${program} -m ${mod}`);
      }
      if (program === 'node' && /^--(test|version|check|help|run)$|^-[vhc]$/.test(v))
        return safe(rc, program);
      if (valued.includes(v)) {
        i++;
        continue;
      }
      if (v === '-') return judgeStdinProgram(program, false, rc);
      if (!v.startsWith('-')) return judgeScriptFile(program, a, rc);
    }
    judgeStdinProgram(program, false, rc);
  };

const awkRule: Rule = (program, args, rc) => {
  const opts = parseOpts(args, { valued: 'fvFW', longValued: ['--file', '--assign', '--field-separator'] });
  if (opts.has('-f', '--file')) return safe(rc, program);
  const code = opts.operands[0];
  if (!code) return safe(rc, program);
  if (!code.exact) return judgeDynamicScript(program, code, rc);
  judgeInlineCode('awk', code.value, rc);
};

// ---------- wrappers that run another command ----------

function skipThen(valued: readonly string[], extraPositional = 0): (args: readonly Arg[]) => Arg[] {
  return (args) => {
    let i = 0;
    for (; i < args.length; i++) {
      const v = (args[i] as Arg).value;
      if (v === '--') {
        i++;
        break;
      }
      if (!v.startsWith('-') || v === '-') break;
      if (valued.includes(v)) i++;
    }
    return args.slice(i + extraPositional);
  };
}

const WRAPPERS: Record<string, (args: readonly Arg[]) => Arg[]> = {
  builtin: skipThen([]),
  exec: skipThen(['-a']),
  nohup: skipThen([]),
  setsid: skipThen([]),
  unbuffer: skipThen([]),
  stdbuf: skipThen(['-i', '-o', '-e']),
  nice: (args) =>
    skipThen(['-n', '--adjustment'])(args).filter(
      (_a, i, all) => !(i === 0 && /^-?\d+$/.test(all[0]?.value ?? '')),
    ),
  ionice: skipThen(['-c', '-n', '--class', '--classdata']),
  chrt: skipThen([], 1),
  taskset: (args) => (args[0]?.value === '-c' ? args.slice(2) : skipThen([])(args).slice(1)),
  timeout: skipThen(['-s', '-k', '--signal', '--kill-after'], 1),
  time: skipThen(['-f', '-o', '--format', '--output']),
  strace: skipThen(['-o', '-e', '-s', '-u', '-E', '-P', '-a', '-b', '-I', '-O', '-S', '-X']),
  ltrace: skipThen(['-o', '-e', '-s', '-u', '-n', '-a', '-x', '-l']),
  'xvfb-run': skipThen(['-s', '-n', '-e', '-f', '-p', '--server-args', '--server-num']),
  'dbus-run-session': skipThen([]),
  caffeinate: skipThen(['-t', '-w']),
  busybox: (args) => args.slice(0),
};

function envRule(recurse: (argv: readonly Arg[], rc: RuleContext) => void): Rule {
  return (program, args, rc) => {
    let cwd = rc.cwd;
    const vars = new Map<string, string | undefined>();
    let i = 0;
    for (; i < args.length; i++) {
      const v = (args[i] as Arg).value;
      if (v === '--') {
        i++;
        break;
      }
      if (/^(-u|--unset|-C|--chdir)$/.test(v)) {
        if (/^(-C|--chdir)$/.test(v)) cwd = resolveDir(args[i + 1], rc);
        i++;
        continue;
      }
      if (/^(-S|--split-string)$/.test(v) || v.startsWith('--split-string=') || /^-S./.test(v)) {
        const script = v.startsWith('--split-string=')
          ? v.slice(15)
          : /^-S./.test(v)
            ? v.slice(2)
            : (args[i + 1]?.value ?? '');
        rc.nested([script, ...args.slice(i + 2).map((a) => a.value)].join(' '), { via: 'env -S' });
        return;
      }
      if (v.startsWith('-') && v !== '-') continue;
      const eq = v.indexOf('=');
      if (eq > 0 && /^[A-Za-z_][A-Za-z0-9_]*$/.test(v.slice(0, eq))) {
        vars.set(v.slice(0, eq), (args[i] as Arg).exact ? v.slice(eq + 1) : undefined);
        continue;
      }
      break;
    }
    const rest = args.slice(i);
    if (rest.length === 0) return safe(rc, program, 'prints the (scrubbed) environment');
    recurse(rest, vars.size > 0 || cwd !== rc.cwd ? withVars(rc.withCwd(cwd), vars) : rc);
  };
}

/** A rule context whose nested scripts also see these variables (`X=rm sh -c '$X -rf /'`). */
function withVars(rc: RuleContext, vars: ReadonlyMap<string, string | undefined>): RuleContext {
  return {
    ...rc,
    add: rc.add,
    nested: (script, options) =>
      rc.nested(script, { ...options, vars: new Map([...vars, ...(options.vars ?? [])]) }),
    withCwd: (cwd) => withVars(rc.withCwd(cwd), vars),
  };
}

function resolveDir(arg: Arg | undefined, rc: RuleContext): string | undefined {
  if (!arg?.exact) return undefined;
  return resolvePath(arg.value, rc);
}

function xargsRule(recurse: (argv: readonly Arg[], rc: RuleContext) => void): Rule {
  return (_program, args, rc) => {
    const opts = parseOpts(args, {
      valued: 'adEeIiLlnPs',
      longValued: [
        '--arg-file',
        '--delimiter',
        '--eof',
        '--replace',
        '--max-lines',
        '--max-args',
        '--max-procs',
        '--max-chars',
      ],
      permute: false,
    });
    const rest = opts.rest.length > 0 ? opts.rest : [lit('echo')];
    const unknownItem = lit('', false);
    const replace = opts.get('-I') ?? opts.get('--replace') ?? opts.get('-i');
    const argv = replace
      ? rest.map((a) =>
          a.value.includes(replace) ? { ...a, value: a.value.split(replace).join(''), exact: false } : a,
        )
      : [...rest, unknownItem];
    recurse(argv, rc);
  };
}

/** A file find would pass to -exec/-delete: somewhere below its start directory. */
const found = (start: Arg): Arg => ({ ...start, value: path.join(start.value, '<found>') });

const FIND_NON_FILTERS =
  /^-(maxdepth|mindepth|depth|d|xdev|mount|follow|L|H|P|print0?|ls|daystart|ignore_readdir_race|noleaf|warn|nowarn|O\d?)$/;

function findRule(recurse: (argv: readonly Arg[], rc: RuleContext) => void): Rule {
  return (program, args, rc) => {
    let i = 0;
    while (i < args.length && /^-[HLP]$|^-O\d$|^-D$/.test((args[i] as Arg).value))
      i += (args[i] as Arg).value === '-D' ? 2 : 1;
    const starts: Arg[] = [];
    for (; i < args.length && !/^[-(!)]/.test((args[i] as Arg).value); i++) starts.push(args[i] as Arg);
    if (starts.length === 0) starts.push(lit('.'));
    const expr = args.slice(i);
    // Tests such as -name/-type narrow what is found; without any, -exec/-delete act on the start dirs.
    let filtered = false;
    for (let j = 0; j < expr.length; j++) {
      const v = (expr[j] as Arg).value;
      if (/^-(exec|execdir|ok|okdir)$/.test(v)) {
        while (j < expr.length && !/^[;+]$/.test((expr[j] as Arg).value)) j++;
      } else if (v.startsWith('-') && !FIND_NON_FILTERS.test(v) && v !== '-delete') filtered = true;
    }
    let acted = false;
    for (let j = 0; j < expr.length; j++) {
      const v = (expr[j] as Arg).value;
      if (v === '-delete') {
        acted = true;
        judgeDelete('find -delete', filtered ? starts.map((s) => found(s)) : starts, true, rc);
      } else if (/^-(exec|execdir|ok|okdir)$/.test(v)) {
        acted = true;
        const end = expr.findIndex((a, k) => k > j && (a.value === ';' || a.value === '+'));
        const cmd = expr.slice(j + 1, end === -1 ? expr.length : end);
        j = end === -1 ? expr.length : end;
        for (const start of starts) {
          const each = filtered ? found(start) : start;
          recurse(
            cmd.map((a) =>
              a.value.includes('{}') ? { ...each, value: a.value.split('{}').join(each.value) } : a,
            ),
            rc,
          );
        }
      } else if (/^-(fprint0?|fprintf|fls)$/.test(v) && expr[j + 1]) {
        acted = true;
        judgeWrite('find', expr[j + 1] as Arg, 'overwrite', rc);
      }
    }
    if (!acted && rc.stdoutToFile) safe(rc, program, 'output is written to a file');
    else if (!acted) {
      rc.add({
        class: 'use_tool',
        risk: 'low',
        program,
        reason: `${program} duplicates the Glob tool`,
        suggestion: 'Use Glob to find files by name pattern (e.g. "src/**/*.ts"), or LS for one directory.',
      });
    }
  };
}

function fdRule(recurse: (argv: readonly Arg[], rc: RuleContext) => void): Rule {
  return (program, args, rc) => {
    const at = args.findIndex((a) => /^(-x|--exec|-X|--exec-batch)$/.test(a.value));
    if (at === -1) {
      rc.add({
        class: 'use_tool',
        risk: 'low',
        program,
        reason: `${program} duplicates the Glob tool`,
        suggestion: 'Use Glob to find files by name pattern.',
      });
      return;
    }
    recurse([...args.slice(at + 1).filter((a) => a.value !== ';'), lit('', false)], rc);
  };
}

// ---------- processes and the system ----------

const killRule: Rule = (program, args, rc) => {
  if (program === 'kill') {
    const pids = args.filter(
      (a, i) =>
        !(i === 0 && /^-/.test(a.value) && a.value !== '-1') &&
        !/^-[sn]$/.test(a.value) &&
        args[i - 1]?.value !== '-s' &&
        args[i - 1]?.value !== '-n',
    );
    const everything =
      pids.some((a) => a.value === '-1' || a.value === '1') ||
      (args[0]?.value !== '-1' && args.slice(1).some((a) => a.value === '-1'));
    if (everything) return never('would signal every process you own (or init)')(program, args, rc);
    if (args.some((a) => /^-(l|L)$/.test(a.value))) return safe(rc, program);
  }
  if (program === 'killall5') return never('signals every process on the machine')(program, args, rc);
  rc.add({
    class: 'destructive',
    risk: program === 'kill' ? 'medium' : 'high',
    program,
    reason: `${program} terminates processes${program === 'kill' ? '' : ' by name (could hit the editor or other work)'}`,
    sessionKey: program === 'kill' ? 'destructive:kill' : undefined,
  });
};

const systemctlRule: Rule = (program, args, rc) => {
  const sub = parseOpts(args).operands[0]?.value ?? '';
  if (
    /^(poweroff|reboot|halt|kexec|suspend|hibernate|hybrid-sleep|rescue|emergency|isolate|default|soft-reboot)$/.test(
      sub,
    )
  ) {
    return never(`${sub} takes the machine down`)(program, args, rc);
  }
  if (/^(status|list-\w+|show|cat|is-\w+|help|--version|get-default)$/.test(sub) || sub === '')
    return safe(rc, program);
  rc.add({
    class: 'destructive',
    risk: 'high',
    program: `${program} ${sub}`,
    reason: `${program} ${sub} changes system services`,
  });
};

const deleteRule: Rule = (program, args, rc) => {
  const opts = parseOpts(args, {
    valued: program === 'shred' ? 'nsu' : '',
    longValued: ['--interactive', '--preserve-root'],
  });
  const recursive =
    opts.has('-r', '-R', '--recursive') || program === 'rimraf' || program === 'del' || program === 'trash';
  if (program === 'rm' && opts.has('--no-preserve-root')) {
    return never('--no-preserve-root disables the last safety net')(program, args, rc);
  }
  judgeDelete(program, opts.operands, recursive, rc);
};

const writerRule =
  (mode: 'create' | 'overwrite'): Rule =>
  (program, args, rc) => {
    const opts = parseOpts(args, {
      valued: program === 'truncate' ? 'sr' : program === 'mkdir' ? 'm' : program === 'touch' ? 'dtr' : '',
    });
    const append = opts.has('-a', '--append');
    for (const op of opts.operands) judgeWrite(program, op, append ? 'append' : mode, rc);
    if (program === 'truncate') {
      rc.add({
        class: 'destructive',
        risk: 'medium',
        program,
        reason: 'truncate discards file contents',
        sessionKey: 'destructive:truncate',
      });
    } else safe(rc, program);
  };

const sedRule: Rule = (program, args, rc) => {
  if (args.some((a) => /^-[a-zA-Z]*i|^--in-place/.test(a.value) && !/^-[a-zA-Z]*[ef]$/.test(a.value))) {
    rc.add({
      class: 'destructive',
      risk: 'medium',
      program: `${program} -i`,
      reason: `${program} -i edits files in place, bypassing review`,
      suggestion: 'Use Edit or MultiEdit to change files.',
      sessionKey: `destructive:${program} -i`,
    });
    return;
  }
  safe(rc, program);
};

const dbClient: Rule = (program, args, rc) => {
  const runs =
    args.some((a) => /^(-c|-e|-f|--command|--execute|--eval|--file)$/.test(a.value)) ||
    rc.stdin.kind !== 'none';
  if (!runs && !(program === 'sqlite3' && args.filter((a) => !a.value.startsWith('-')).length >= 2)) {
    return interactive(
      'without a query opens an interactive prompt',
      'Pass the query with -c/-e, or pipe it in.',
    )(program, args, rc);
  }
  rc.add({
    class: 'network',
    risk: 'medium',
    program,
    reason: `${program} runs queries against a database`,
    sessionKey: `network:${program}`,
  });
};

const dockerRule: Rule = (program, args, rc) => {
  const opts = parseOpts(args, {
    valued: 'H',
    longValued: ['--context', '--host', '--config', '--log-level'],
    permute: false,
  });
  const sub = opts.operands[0]?.value ?? '';
  const rest = parseOpts(opts.operands.slice(1));
  if ((sub === 'run' || sub === 'exec') && (rest.has('-i', '--interactive') || rest.has('-t', '--tty'))) {
    return interactive('-it needs an interactive terminal')(program, args, rc);
  }
  if (
    /^(ps|images|inspect|version|info|logs|top|stats|port|diff|history|events|context|search|help|)$/.test(
      sub,
    )
  ) {
    if (sub === 'logs' && rest.has('-f', '--follow'))
      return interactive('logs -f never ends')(program, args, rc);
    return safe(rc, `${program} ${sub}`.trim());
  }
  if (/^(rm|rmi|kill|prune|system|volume|network|stop|down)$/.test(sub)) {
    return rc.add({
      class: 'destructive',
      risk: 'high',
      program: `${program} ${sub}`,
      reason: `${program} ${sub} removes or stops containers/data`,
    });
  }
  rc.add({
    class: 'network',
    risk: 'medium',
    program: `${program} ${sub}`,
    reason: `${program} ${sub} may pull images or expose services`,
    sessionKey: `network:${program} ${sub}`,
  });
};

function aliasRule(): Rule {
  return (program, args, rc) => {
    for (const a of args) {
      const eq = a.value.indexOf('=');
      if (eq > 0) rc.nested(a.value.slice(eq + 1), { via: 'alias' });
    }
    safe(rc, program);
  };
}

const trapRule: Rule = (program, args, rc) => {
  const opts = parseOpts(args, { permute: false });
  const action = opts.operands[0];
  if (!action || opts.operands.length < 2 || action.value === '-' || action.value === '')
    return safe(rc, program);
  if (action.exact) rc.nested(action.value, { via: 'trap' });
  else judgeDynamicScript('trap', action, rc);
};

const evalRule: Rule = (program, args, rc) => {
  if (args.length === 0) return safe(rc, program);
  const joined: Arg = {
    value: args.map((a) => a.value).join(' '),
    exact: args.every((a) => a.exact),
    glob: false,
    substs: args.flatMap((a) => a.substs),
  };
  if (joined.exact) rc.nested(joined.value, { via: 'eval' });
  else judgeDynamicScript('eval', joined, rc);
};

const sourceRule: Rule = (program, args, rc) => {
  const file = args[0];
  if (!file) return safe(rc, program);
  if (file.value === '/dev/stdin' || file.value === '-') return judgeStdinProgram(program, true, rc);
  judgeScriptFile(program, file, rc);
};

// ---------- the table ----------

// Programs that are never run, whatever the arguments: root, disks, power, accounts, kernel, firewall.
const NEVER: readonly (readonly [string, string])[] = [
  ['sudo doas pkexec', 'runs commands as root'],
  ['su', 'switches user'],
  ['sudoedit', 'edits files as root'],
  ['runuser', 'runs commands as another user'],
  ['chroot', 'changes the root directory'],
  ['mkfs', 'formats a filesystem'],
  ['mkswap', 'formats a swap area'],
  ['fdisk sfdisk cfdisk gdisk sgdisk parted', 'edits partition tables'],
  ['wipefs', 'wipes filesystem signatures'],
  ['blkdiscard', 'discards a whole device'],
  ['shutdown poweroff', 'powers the machine off'],
  ['reboot', 'reboots the machine'],
  ['halt', 'halts the machine'],
  ['init telinit', 'changes the runlevel'],
  ['kexec', 'replaces the running kernel'],
  ['insmod modprobe', 'loads kernel modules'],
  ['rmmod', 'unloads kernel modules'],
  ['passwd chpasswd', 'changes account passwords'],
  ['useradd', 'creates accounts'],
  ['userdel', 'deletes accounts'],
  ['usermod', 'modifies accounts'],
  ['groupadd', 'creates groups'],
  ['groupdel', 'deletes groups'],
  ['visudo', 'edits sudo rights'],
  ['vipw', 'edits the password file'],
  ['mount', 'mounts filesystems'],
  ['umount', 'unmounts filesystems'],
  ['iptables ip6tables nft ufw', 'changes the firewall'],
  ['swapoff', 'disables swap'],
];

const INTERACTIVE = words(
  'vi vim nvim view vimdiff gvim nano pico micro joe ed ex mcedit kak hx man info top htop btop',
  'atop iotop glances nmon watch tmux screen byobu mc ranger nnn lf fzf dialog whiptail telnet ftp',
  'lftp mosh irb pry ghci iex erl utop ipython bpython jshell open xdg-open crontab-e tig lazygit',
  'gdb lldb',
);

const READERS = words('cat tac nl bat batcat head tail less more strings od hexdump xxd');
const SEARCHERS = ['grep', 'egrep', 'fgrep', 'rg', 'ag', 'ack', 'zgrep'];
const LISTERS = ['ls', 'dir', 'vdir', 'tree', 'exa', 'eza', 'lsd', 'locate', 'mlocate', 'plocate'];
const SHELLS = words('sh bash zsh dash ksh mksh ash fish csh tcsh rbash yash oksh posh');
const INTERPRETERS = words(
  'python node ruby perl php lua luajit Rscript osascript pwsh powershell julia tclsh',
);
const HTTP = words('curl wget aria2c axel http https xh httpie lynx links w3m fetch');
const CLOUD = words(
  'gh hub glab aws gcloud gsutil az kubectl helm terraform tofu pulumi vercel netlify heroku fly',
  'flyctl firebase wrangler doctl twine ansible ansible-playbook sam cdk serverless eksctl',
);
const SYSTEM_PMS = words(
  'apt apt-get aptitude yum dnf apk brew pacman zypper snap flatpak port nix-env choco winget dpkg',
  'rpm emerge',
);
const LANG_PMS = words(
  'npm yarn pnpm bun pip pipx uv poetry pdm gem bundle cargo go composer conda mamba deno dotnet',
);

export function buildRules(recurse: (argv: readonly Arg[], rc: RuleContext) => void): Map<string, Rule> {
  const rules = new Map<string, Rule>();
  const set = (names: readonly string[], rule: Rule) => {
    for (const n of names) rules.set(n, rule);
  };
  for (const [names, what] of NEVER) set(words(names), never(what));
  set(INTERACTIVE, interactive('is interactive and would wait for input'));
  set(READERS, reader);
  set(SEARCHERS, searcher);
  set(LISTERS, lister);
  set(SHELLS, shellRule);
  set(INTERPRETERS, interpreterRule(recurse));
  set(['awk', 'gawk', 'mawk', 'nawk'], awkRule);
  set(HTTP, httpClient);
  set(['nc', 'ncat', 'netcat', 'socat'], socketTool);
  set(['ssh', 'scp', 'sftp'], sshRule);
  set(['rsync'], rsyncRule);
  set(
    ['dig', 'nslookup', 'host', 'whois', 'ping', 'ping6', 'traceroute', 'mtr', 'nmap', 'tcpdump'],
    network('low', 'probes the network'),
  );
  set(CLOUD, network('medium', 'acts on remote/cloud resources'));
  set(['docker', 'podman', 'nerdctl', 'docker-compose'], dockerRule);
  set(['mysql', 'psql', 'sqlite3', 'mongo', 'mongosh', 'redis-cli'], dbClient);
  set(SYSTEM_PMS, systemPackages);
  const npx = npxRule(recurse);
  set(
    LANG_PMS,
    packageManager((mode, args, rc) => npx(mode, args, rc, recurse)),
  );
  set(['npx', 'bunx', 'pnpx', 'uvx'], (p, a, rc) => npx(p === 'uvx' ? 'dlx' : p, a, rc, recurse));
  rules.set('git', gitRule);
  set(['rm', 'unlink', 'shred', 'wipe', 'srm', 'rimraf', 'del', 'trash', 'trash-put'], deleteRule);
  rules.set('rmdir', (p, a, rc) => {
    for (const op of parseOpts(a).operands) judgeWrite(p, op, 'create', rc);
    safe(rc, p);
  });
  set(['chmod', 'chown', 'chgrp', 'chattr', 'setfacl'], judgePermissions);
  set(['cp', 'mv', 'ln', 'install'], judgeCopy);
  rules.set('dd', (_p, a, rc) => judgeDd(a, rc));
  set(['touch', 'mkdir', 'tee'], writerRule('create'));
  rules.set('tee', writerRule('overwrite'));
  rules.set('truncate', writerRule('overwrite'));
  set(['sed', 'gsed'], sedRule);
  set(['kill', 'pkill', 'killall', 'killall5', 'skill', 'xkill'], killRule);
  set(['systemctl', 'service', 'launchctl', 'rc-service'], systemctlRule);
  set(['crontab', 'at', 'batch'], (p, a, rc) =>
    a.some((x) => x.value === '-l')
      ? safe(rc, p)
      : rc.add({
          class: 'destructive',
          risk: 'high',
          program: p,
          reason: `${p} schedules or removes jobs that outlive the session`,
        }),
  );
  rules.set('env', envRule(recurse));
  rules.set('command', (p, a, rc) =>
    a.some((x) => /^-[vV]$/.test(x.value)) ? safe(rc, p) : recurse(skipThen(['-p'])(a), rc),
  );
  for (const [name, unwrap] of Object.entries(WRAPPERS)) {
    rules.set(name, (p, a, rc) => {
      const rest = unwrap(a);
      return rest.length ? recurse(rest, rc) : safe(rc, p);
    });
  }
  rules.set('flock', (p, a, rc) => {
    const c = a.findIndex((x) => x.value === '-c' || x.value === '--command');
    if (c !== -1) return rc.nested(a[c + 1]?.value ?? '', { via: 'flock -c' });
    const rest = skipThen(['-w', '-E', '--timeout', '--conflict-exit-code'], 1)(a);
    return rest.length ? recurse(rest, rc) : safe(rc, p);
  });
  rules.set('script', (p, a, rc) => {
    const c = a.findIndex((x) => x.value === '-c' || x.value === '--command');
    if (c !== -1) return rc.nested(a[c + 1]?.value ?? '', { via: 'script -c' });
    interactive('records an interactive session')(p, a, rc);
  });
  rules.set('xargs', xargsRule(recurse));
  rules.set('parallel', (p, a, rc) => {
    const end = a.findIndex((x) => x.value === ':::' || x.value === '::::');
    const cmd = skipThen(['-j', '-P', '--jobs'])(end === -1 ? a : a.slice(0, end));
    if (cmd.length === 0) return safe(rc, p);
    rc.nested(cmd.map((x) => x.value).join(' '), { via: 'parallel' });
  });
  rules.set('find', findRule(recurse));
  set(['fd', 'fdfind'], fdRule(recurse));
  rules.set('eval', evalRule);
  set(['source', '.'], sourceRule);
  rules.set('trap', trapRule);
  rules.set('alias', aliasRule());
  rules.set('emacs', (p, a, rc) =>
    a.some((x) => /^--?(batch|script)$/.test(x.value))
      ? safe(rc, p)
      : interactive('is an interactive editor')(p, a, rc),
  );
  rules.set('tar', (p, a, rc) =>
    a.some((x) =>
      /--to-command|--checkpoint-action|--use-compress-program|--rsh-command|--info-script|--new-volume-script/.test(
        x.value,
      ),
    )
      ? rc.add({ class: 'unknown', risk: 'high', program: p, reason: 'tar told to run an external command' })
      : safe(rc, p),
  );
  return rules;
}

// Names that differ only by version or variant share a rule: python3.12 → python, mkfs.ext4 → mkfs.
export function normalizeProgram(name: string): string {
  const base = name.replace(/\.exe$/i, '');
  const versioned = /^(python|pip|pypy|ruby|perl|php|lua|node|nodejs|pwsh)[\d.]*$/.exec(base);
  if (versioned) {
    const n = versioned[1] as string;
    return n === 'nodejs' ? 'node' : n === 'pypy' ? 'python' : n;
  }
  if (/^mkfs(\..+)?$|^mke2fs$|^mkdosfs$|^mkntfs$/.test(base)) return 'mkfs';
  return base;
}

/** Expands a program-position glob such as `/???/r?` against the real filesystem. */
export function globProgram(pattern: string, cwd: string | undefined): string[] {
  if (!pattern.includes('/')) return [];
  const toRegex = (seg: string) =>
    new RegExp(
      `^${seg
        .replace(/[.+^${}()|\\]/g, '\\$&')
        .replace(/\*/g, '.*')
        .replace(/\?/g, '.')
        .replace(/\[!/g, '[^')}$`,
    );
  let dirs = [pattern.startsWith('/') ? '/' : (cwd ?? '')];
  if (dirs[0] === '') return [];
  for (const seg of pattern.split('/').filter((s) => s !== '')) {
    const next: string[] = [];
    for (const dir of dirs) {
      if (!/[*?[]/.test(seg)) {
        next.push(path.join(dir, seg));
        continue;
      }
      let names: string[] = [];
      try {
        names = fs.readdirSync(dir);
      } catch {
        names = [];
      }
      const re = toRegex(seg);
      for (const n of names)
        if (re.test(n) && !(n.startsWith('.') && !seg.startsWith('.'))) next.push(path.join(dir, n));
    }
    dirs = next.slice(0, 64);
  }
  return dirs.filter((d) => fs.existsSync(d));
}

const MAX_PROBE_FINDINGS = 8;

/** The program word is only known at run time (`$X -rf /`, `$(cmd) …`). */
function dynamicProgram(argv: readonly Arg[], rc: RuleContext): void {
  const head = argv[0] as Arg;
  if (rc.substsFetch(head.substs)) {
    rc.add({
      class: 'never',
      risk: 'high',
      program: '<dynamic>',
      reason: 'runs a program named by content downloaded from the network',
    });
    return;
  }
  // Whatever it turns out to be, arguments that would wipe a critical tree if it were rm/chmod are
  // enough: no legitimate command looks like `$X -rf /`.
  const probe: FindingInput[] = [];
  const quiet: RuleContext = {
    ...rc,
    add: (f) => probe.length < MAX_PROBE_FINDINGS && probe.push(f),
    nested: () => {},
  };
  deleteRule('rm', argv.slice(1), quiet, classifyArgv);
  judgePermissions('chmod', argv.slice(1), quiet);
  const fatal = probe.find((f) => f.class === 'never');
  if (fatal) {
    rc.add({
      class: 'never',
      risk: 'high',
      program: '<dynamic>',
      reason: `program name is computed at run time and its arguments would be catastrophic (as rm/chmod: ${fatal.reason})`,
    });
    return;
  }
  rc.add({
    class: 'unknown',
    risk: 'high',
    program: '<dynamic>',
    reason: `program name is computed at run time (${head.value === '' ? 'from a variable or substitution' : `"${head.value}…"`}), so what runs cannot be checked`,
  });
}

export function classifyArgv(argv: readonly Arg[], rc: RuleContext): void {
  const head = argv[0];
  if (!head) return;
  if (!head.exact) {
    dynamicProgram(argv, rc);
    return;
  }
  if (head.value === '') {
    safe(rc, '(empty)');
    return;
  }
  if (head.glob) {
    const matches = globProgram(head.value, rc.cwd);
    if (matches.length === 0) {
      dynamicProgram([{ ...head, exact: false }, ...argv.slice(1)], rc);
      return;
    }
    for (const m of matches) classifyArgv([lit(m), ...argv.slice(1)], rc);
    return;
  }
  const name = normalizeProgram(path.basename(head.value) || head.value);
  const rule = RULES.get(name);
  if (rule) rule(name, argv.slice(1), rc, classifyArgv);
  else safe(rc, name);
}

const RULES = buildRules(classifyArgv);

import * as path from 'node:path';
import {
  aliasRule,
  awkRule,
  evalRule,
  judgeWrittenFile,
  shellRule,
  sourceRule,
  trapRule,
} from './codeRules.ts';
import { type Arg, type FindingInput, parseOpts, type RuleContext, skipThen, words } from './commandTypes.ts';
import { judgeCopy, judgeDd } from './copyRules.ts';
import {
  CLOUD,
  HTTP,
  INTERACTIVE,
  INTERPRETERS,
  LANG_PMS,
  LISTERS,
  NEVER,
  READERS,
  SEARCHERS,
  SHELLS,
  SYSTEM_PMS,
} from './programTables.ts';
import { gitRule } from './gitRules.ts';
import {
  cmakeRule,
  emacsRule,
  extractInto,
  namespaceRule,
  opensslRule,
  sessionManagerRule,
  tarRule,
} from './hostRules.ts';
import { interpreterRule, runtimeEval } from './interpreterRules.ts';
import { judgeLinks, judgeMklink } from './linkRules.ts';
import { judgeArgumentPaths } from './outsidePaths.ts';
import { judgeMakefile, judgeScriptOnDisk } from './scriptRules.ts';
import {
  expandGlob,
  judgeDelete,
  judgePermissions,
  judgeWrite,
  MAX_GLOB_MATCHES,
  resolvePath,
} from './pathRules.ts';
import { asciiSkeleton, linkTarget, normalizeProgram } from './programNames.ts';
import {
  httpClient,
  interactive,
  lister,
  lit,
  network,
  never,
  type Rule,
  reader,
  rsyncRule,
  safe,
  searcher,
  socketTool,
  sshRule,
} from './programRules.ts';
import { npxRule, packageManager, systemPackages } from './packageRules.ts';
import {
  dbClient,
  detachRule,
  dockerRule,
  killRule,
  schedulerRule,
  sedRule,
  sortRule,
  systemctlRule,
  zipRule,
} from './systemRules.ts';
import { envRule, fdRule, findRule, WRAPPERS, xargsRule } from './wrapperRules.ts';

// Classifies one simple command (argv after expansion) by its program, after unwrapping wrappers.
// The table below maps program names to rules; anything not in it is an ordinary command.

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
    for (const op of opts.operands) {
      judgeWrite(program, op, append ? 'append' : mode, rc);
      // `echo 'sudo id' | tee x.sh; sh x.sh`: remember what tee wrote.
      const abs = program === 'tee' && op.exact ? resolvePath(op.value, rc) : undefined;
      if (abs) {
        const before = append ? rc.written(abs)?.content : '';
        const content =
          rc.stdin.content !== undefined && before !== undefined ? before + rc.stdin.content : undefined;
        rc.markWritten(abs, content !== undefined && !rc.stdin.network ? { content } : {});
      }
    }
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

// ---------- the table ----------

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
  // Web servers and tunnels expose the workspace (like `python -m http.server`).
  set(
    words('httpd lighttpd nginx caddy apache2 ngrok cloudflared lt localtunnel'),
    network('medium', 'serves files or tunnels a port to the network'),
  );
  set(['docker', 'podman', 'nerdctl', 'docker-compose'], dockerRule);
  set(['mysql', 'psql', 'sqlite3', 'mongo', 'mongosh', 'redis-cli'], dbClient);
  set(SYSTEM_PMS, systemPackages);
  const npx = npxRule(recurse);
  const pm = packageManager((mode, args, rc) => npx(mode, args, rc, recurse));
  set(LANG_PMS, (p, a, rc, r) => {
    if ((p === 'deno' || p === 'bun') && runtimeEval(p, a, rc)) return;
    pm(p, a, rc, r);
  });
  set(['npx', 'bunx', 'pnpx', 'uvx'], (p, a, rc) => npx(p === 'uvx' ? 'dlx' : p, a, rc, recurse));
  rules.set('git', gitRule);
  set(['rm', 'unlink', 'shred', 'wipe', 'srm', 'rimraf', 'del', 'trash', 'trash-put'], deleteRule);
  rules.set('rmdir', (p, a, rc) => {
    for (const op of parseOpts(a).operands) judgeWrite(p, op, 'create', rc);
    safe(rc, p);
  });
  set(['chmod', 'chown', 'chgrp', 'chattr', 'setfacl'], judgePermissions);
  set(['mv', 'install'], judgeCopy);
  set(['cp', 'ln', 'link'], (p, a, rc) => {
    judgeLinks(p, a, rc);
    judgeCopy(p, a, rc);
  });
  rules.set('mklink', judgeMklink);
  rules.set('dd', (_p, a, rc) => judgeDd(a, rc));
  set(['touch', 'mkdir', 'tee'], writerRule('create'));
  rules.set('tee', writerRule('overwrite'));
  rules.set('truncate', writerRule('overwrite'));
  set(['sed', 'gsed'], sedRule);
  set(['kill', 'pkill', 'killall', 'killall5', 'skill', 'xkill'], killRule);
  set(['systemctl', 'service', 'launchctl', 'rc-service'], systemctlRule);
  set(['crontab', 'at', 'batch', 'systemd-run', 'start-stop-daemon'], schedulerRule);
  set(['sort'], sortRule);
  set(['make', 'gmake'], (p, a, rc) => {
    judgeMakefile(a, rc);
    safe(rc, p);
  });
  set(['hash', 'enable'], (p, a, rc) =>
    a.some((x) => /^-[a-z]*[pf]/.test(x.value))
      ? rc.add({
          class: 'unknown',
          risk: 'high',
          program: p,
          reason: `${p} ${p === 'hash' ? '-p makes a name run another program' : '-f loads code into the shell'}`,
        })
      : safe(rc, p),
  );
  set(['zip'], zipRule);
  rules.set('env', envRule(recurse));
  rules.set('command', (p, a, rc) =>
    a.some((x) => /^-[vV]$/.test(x.value)) ? safe(rc, p) : recurse(skipThen([])(a), rc),
  );
  for (const [name, unwrap] of Object.entries(WRAPPERS)) {
    rules.set(name, (p, a, rc) => {
      const rest = unwrap(a);
      return rest.length ? recurse(rest, rc) : safe(rc, p);
    });
  }
  for (const name of ['setsid', 'nohup', 'disown', 'daemonize', 'daemon'])
    rules.set(name, detachRule(recurse, name === 'disown' ? () => [] : skipThen(['-f'])));
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
  rules.set('emacs', emacsRule);
  rules.set('tar', tarRule(recurse));
  rules.set('unzip', extractInto);
  rules.set('cmake', cmakeRule(recurse));
  rules.set('openssl', opensslRule);
  set(['machinectl', 'loginctl'], sessionManagerRule);
  rules.set(
    'unshare',
    namespaceRule(
      recurse,
      words(
        '--map-user --map-group --map-users --map-groups --setuid --setgid -S -G --propagation --root --wd -R -w',
      ),
    ),
  );
  rules.set('fakeroot', namespaceRule(recurse, words('-l --lib --faked -s -i')));
  rules.set(
    'setpriv',
    namespaceRule(
      recurse,
      words('--reuid --regid --groups --inh-caps --ambient-caps --bounding-set --securebits'),
    ),
  );
  return rules;
}

/** Expands a program-position glob such as `/???/r?` against the real filesystem. */
function globProgram(pattern: string, cwd: string | undefined): string[] {
  return pattern.includes('/') ? expandGlob(pattern, cwd) : [];
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
  if (argv.some((a) => a.truncated))
    rc.add({
      class: 'unknown',
      risk: 'high',
      program: '<braces>',
      reason: 'a brace expansion makes more arguments than can be checked',
    });
  classifyProgram(argv, rc);
  // Every level (a wrapped command, xargs items, find -exec) has its path arguments judged, after
  // the program's own rule (whose more specific finding, e.g. "writes outside", then leads).
  judgeArgumentPaths(argv, rc);
}

function classifyProgram(argv: readonly Arg[], rc: RuleContext): void {
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
    // The expansion is capped: what it did not list may be any program.
    if (matches.length >= MAX_GLOB_MATCHES) dynamicProgram([{ ...head, exact: false }, ...argv.slice(1)], rc);
    return;
  }
  const where = head.value.includes('/') ? resolvePath(head.value, rc) : undefined;
  if (where && rc.isDownloaded(where)) {
    rc.add({
      class: 'never',
      risk: 'high',
      program: head.value,
      reason: `runs ${head.value}, downloaded from the network in the same command`,
    });
    return;
  }
  const copyOf = where ? rc.written(where)?.program : undefined;
  if (copyOf !== undefined) {
    // `ln -s /bin/rm x; ./x -rf /` is rm.
    classifyArgv([lit(copyOf), ...argv.slice(1)], rc);
    return;
  }
  if (where && judgeWrittenFile('sh', where, rc)) return;
  const name = normalizeProgram(path.basename(head.value) || head.value);
  // A symbolic link is judged as itself and as what it points to (`./x` → /usr/bin/rm).
  const target = linkTarget(where);
  const linked = target ? normalizeProgram(path.basename(target)) : undefined;
  if (linked && linked !== name && RULES.has(linked))
    classifyArgv([lit(target as string), ...argv.slice(1)], rc);
  if (/[^\x20-\x7e]/.test(name)) {
    lookalike(name, argv, rc);
    return;
  }
  const rule = RULES.get(name);
  if (rule) rule(name, argv.slice(1), rc, classifyArgv);
  else {
    if (where) judgeScriptOnDisk(where, rc, true);
    safe(rc, name);
  }
}

/**
 * A program name with non-ASCII or control characters cannot be a normal development command; it
 * is judged as the program it imitates (`ѕudo` → sudo) and never silently allowed.
 */
function lookalike(name: string, argv: readonly Arg[], rc: RuleContext): void {
  const skeleton = asciiSkeleton(name);
  if (skeleton !== name && /^[\x20-\x7e]+$/.test(skeleton))
    classifyArgv([lit(skeleton), ...argv.slice(1)], rc);
  rc.add({
    class: 'unknown',
    risk: 'high',
    program: name,
    reason: `the program name "${name}" contains non-ASCII or invisible characters${skeleton !== name ? ` (looks like "${skeleton}")` : ''}`,
  });
}

const RULES = buildRules(classifyArgv);

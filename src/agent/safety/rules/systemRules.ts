import { type Arg, parseOpts, type RuleContext } from './commandTypes.ts';
import { judgeWrite } from './pathRules.ts';
import { interactive, never, type Rule, safe } from './programRules.ts';

// Rules for programs that act on the machine rather than on files: processes, services, containers,
// databases, schedulers and detached processes — plus the text tools (sed, sort, zip) whose options
// quietly write files or run commands.

// ---------- processes and the system ----------

export const killRule: Rule = (program, args, rc) => {
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

export const systemctlRule: Rule = (program, args, rc) => {
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

export const dbClient: Rule = (program, args, rc) => {
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

export const dockerRule: Rule = (program, args, rc) => {
  const opts = parseOpts(args, {
    valued: 'H',
    longValued: ['--context', '--host', '--config', '--log-level'],
    permute: false,
  });
  const sub = opts.operands[0]?.value ?? '';
  const rest = parseOpts(opts.operands.slice(1));
  if (
    (sub === 'run' || sub === 'create') &&
    (rest.has('--privileged', '--pid', '--cap-add', '--device') ||
      rest.flags.get('--pid') === 'host' ||
      rest.flags.get('--network') === 'host' ||
      args.some(
        (a, i) =>
          /^(-v|--volume|--mount)$/.test(args[i - 1]?.value ?? '') &&
          /^(\/|~|src=\/)(:|,|$)|^\/:|^\/var\/run\/docker\.sock/.test(a.value),
      ))
  ) {
    return rc.add({
      class: 'destructive',
      risk: 'high',
      program: `${program} ${sub}`,
      reason: `${program} ${sub} with host privileges or the host filesystem gives the container root on this machine`,
    });
  }
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

export const schedulerRule: Rule = (program, args, rc) => {
  if (args.some((x) => x.value === '-l')) return safe(rc, program);
  rc.add({
    class: 'destructive',
    risk: 'high',
    program,
    reason: `${program} schedules or removes jobs that outlive the session`,
  });
};

/** setsid, nohup, disown, systemd-run…: processes that outlive the command and escape its timeout. */
export const detachRule =
  (recurse: (argv: readonly Arg[], rc: RuleContext) => void, skip: (args: readonly Arg[]) => Arg[]): Rule =>
  (program, args, rc) => {
    rc.add({
      class: 'unknown',
      risk: 'medium',
      program,
      reason: `${program} starts a process that outlives the command (its timeout and abort no longer apply)`,
      sessionKey: `unknown:${program}`,
    });
    const rest = skip(args);
    if (rest.length > 0) recurse(rest, rc);
  };

/** GNU sed scripts can write files (`w f`, `s/…/…/w f`) and run commands (`e cmd`, `s/…/…/e`). */
function sedScriptEffects(script: string): { writes: string[]; runs: string[]; exec: boolean } {
  const writes: string[] = [];
  const runs: string[] = [];
  let exec = false;
  for (const raw of script.split(/\n|;/)) {
    const line = raw
      .trim()
      .replace(/^(\d+|\$|\/(?:\\.|[^/])*\/)?(,(\d+|\$|\/(?:\\.|[^/])*\/))?!?\s*\{?\s*/, '');
    const cmd = /^([wWe])\s*(.*)$/.exec(line);
    if (cmd) {
      if (cmd[1] === 'e') {
        exec = true;
        if (cmd[2]) runs.push(cmd[2]);
      } else if (cmd[2]) writes.push(cmd[2]);
      continue;
    }
    const sub = /^s(.)(?:\\.|(?!\1).)*\1(?:\\.|(?!\1).)*\1([gpiImMe\d]*)(w\s*(.*))?$/.exec(line);
    if (sub) {
      if (sub[2]?.includes('e')) exec = true;
      if (sub[4]) writes.push(sub[4].trim());
    }
  }
  return { writes, runs, exec };
}

export const sedRule: Rule = (program, args, rc) => {
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
  const opts = parseOpts(args, { valued: 'efl', longValued: ['--expression', '--file', '--line-length'] });
  const scripts = [opts.get('-e'), opts.get('--expression')].filter((x): x is string => x !== undefined);
  const fromFile = opts.has('-f', '--file');
  if (scripts.length === 0 && !fromFile && opts.operands[0]) scripts.push(opts.operands[0].value);
  for (const script of scripts) {
    const effects = sedScriptEffects(script);
    for (const file of effects.writes)
      judgeWrite(program, { value: file, exact: true, glob: false, substs: [] }, 'overwrite', rc);
    for (const run of effects.runs) rc.nested(run, { via: `${program} e` });
    if (effects.exec)
      rc.add({
        class: 'unknown',
        risk: 'high',
        program,
        reason: `${program} script runs shell commands (e)`,
      });
  }
  safe(rc, program);
};

/** sort -o FILE, uniq IN OUT: output files. */
export const sortRule: Rule = (program, args, rc) => {
  const opts = parseOpts(args, { valued: 'otkSTy', longValued: ['--output', '--key', '--buffer-size'] });
  const out = opts.get('-o') ?? opts.get('--output');
  if (out !== undefined)
    judgeWrite(program, { value: out, exact: true, glob: false, substs: [] }, 'overwrite', rc);
  safe(rc, program);
};

/** zip -TT / --unzip-command runs a command to test the archive. */
export const zipRule: Rule = (program, args, rc) => {
  const at = args.findIndex((a) => /^(-TT|--unzip-command)(=|$)/.test(a.value));
  if (at !== -1) {
    const v = args[at] as Arg;
    rc.nested(v.value.includes('=') ? v.value.slice(v.value.indexOf('=') + 1) : (args[at + 1]?.value ?? ''), {
      via: `${program} -TT`,
    });
    rc.add({ class: 'unknown', risk: 'high', program, reason: `${program} -TT runs a command` });
    return;
  }
  safe(rc, program);
};

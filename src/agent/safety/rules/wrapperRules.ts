import * as path from 'node:path';
import { type Arg, parseOpts, type RuleContext, skipThen } from './commandTypes.ts';
import type { ShNode } from '../shell/shellParse.ts';
import { judgeAssignment } from './envRules.ts';
import { judgeDelete, judgeWrite, resolvePath } from './pathRules.ts';
import { lit, type Recurse, type Rule, safe } from './programRules.ts';

// Commands that run another command: env, nice, timeout, xargs, find -exec … They are unwrapped so
// the command that would really run is the one judged.

export const WRAPPERS: Record<string, (args: readonly Arg[]) => Arg[]> = {
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
  // Multi-call binaries: `busybox rm -rf ~`, `toybox sh -c …` are those programs.
  busybox: (args) => args.slice(0),
  toybox: (args) => args.slice(0),
};

export function envRule(recurse: Recurse): Rule {
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
        const value = (args[i] as Arg).exact ? v.slice(eq + 1) : undefined;
        vars.set(v.slice(0, eq), value);
        judgeAssignment(v.slice(0, eq), value, v.slice(eq + 1), rc);
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

const MAX_XARGS_ITEMS = 16;

export function xargsRule(recurse: Recurse): Rule {
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
    // Items from the network are code from the network: `curl … | xargs sh -c`.
    const fromNetwork = rc.stdin.network;
    const unknownItem: Arg = { ...lit('', false), substs: fromNetwork ? [NETWORK_ITEM] : [] };
    const itemRc: RuleContext = fromNetwork
      ? { ...rc, substsFetch: (s) => s.includes(NETWORK_ITEM) || rc.substsFetch(s) }
      : rc;
    const replace = opts.get('-I') ?? opts.get('--replace') ?? opts.get('-i');
    // Items known in advance (`echo / | xargs rm -rf`) are judged as the arguments they become.
    const content = opts.has('-a', '--arg-file') ? undefined : rc.stdin.content;
    const delimiter = opts.has('-0', '--null') ? /\0+/ : /\s+/;
    const all = content?.split(delimiter).filter((x) => x !== '');
    // Without -I all items make one argv (judged whole); with -I each makes its own command.
    const items = replace ? all?.slice(0, MAX_XARGS_ITEMS) : all;
    if (items && items.length > 0) {
      for (const item of replace ? items : [items.join('\u0000')]) {
        const values = replace ? [item] : item.split('\u0000');
        const argv = replace
          ? rest.map((a) =>
              a.value.includes(replace) ? { ...a, value: a.value.split(replace).join(item) } : a,
            )
          : [...rest, ...values.map((v) => lit(v))];
        recurse(argv, itemRc);
      }
      // Items past the cap are still judged, as unknown arguments.
      if ((all?.length ?? 0) <= (items?.length ?? 0)) return;
    }
    const argv = replace
      ? rest.map((a) =>
          a.value.includes(replace)
            ? { ...a, value: a.value.split(replace).join(''), exact: false, substs: unknownItem.substs }
            : a,
        )
      : [...rest, unknownItem];
    recurse(argv, itemRc);
  };
}

/** Stands for "an argument xargs reads from a network-fed stdin". */
const NETWORK_ITEM: ShNode = {};

/** A file find would pass to -exec/-delete: somewhere below its start directory. */
const found = (start: Arg): Arg => ({ ...start, value: path.join(start.value, '<found>') });

const FIND_NON_FILTERS =
  /^-(maxdepth|mindepth|depth|d|xdev|mount|follow|L|H|P|print0?|ls|daystart|ignore_readdir_race|noleaf|warn|nowarn|O\d?)$/;

export function findRule(recurse: Recurse): Rule {
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

export function fdRule(recurse: Recurse): Rule {
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

import * as path from 'node:path';
import { type Arg, parseOpts, type RuleContext, skipThen } from './commandTypes.ts';
import { judgeWrite, resolvePath } from './pathRules.ts';
import { interactive, lit, never, type Recurse, type Rule, safe } from './programRules.ts';

// Programs that look like ordinary tools but reach past the workspace: multi-call binaries (toybox),
// namespace and privilege tools, session/machine managers, build tools with a portable shell mode
// (cmake -E), editors that evaluate code in batch mode, archivers that run compressors, openssl's
// network clients. Each is mapped onto the rule of what it really does.

/** `cmake -E <command>`: the portable shell. Mapped onto the equivalent shell command. */
const CMAKE_E: Record<string, readonly string[]> = {
  rm: ['rm'],
  remove: ['rm', '-f'],
  remove_directory: ['rm', '-r'],
  copy: ['cp'],
  copy_if_different: ['cp'],
  copy_directory: ['cp', '-r'],
  copy_directory_if_different: ['cp', '-r'],
  rename: ['mv'],
  make_directory: ['mkdir', '-p'],
  touch: ['touch'],
  touch_nocreate: ['touch'],
  create_symlink: ['ln', '-s'],
  create_hardlink: ['ln'],
  cat: ['cat'],
  tar: ['tar'],
  env: ['env'],
  time: [],
};

export const cmakeRule =
  (recurse: Recurse): Rule =>
  (program, args, rc) => {
    const at = args.findIndex((a) => a.value === '-E');
    if (at === -1) return safe(rc, program);
    const sub = args[at + 1]?.value ?? '';
    const rest = args.slice(at + 2);
    if (sub === 'chdir') {
      const dir = rest[0];
      const cwd = dir?.exact ? resolvePath(dir.value, rc) : undefined;
      if (rest.length > 1) recurse(rest.slice(1), rc.withCwd(cwd));
      return safe(rc, `${program} -E chdir`);
    }
    const mapped = CMAKE_E[sub];
    if (mapped === undefined) return safe(rc, `${program} -E ${sub}`);
    if (mapped.length === 0) return rest.length ? recurse(rest, rc) : safe(rc, program);
    recurse([...mapped.map((w) => lit(w)), ...rest], rc);
  };

// Emacs Lisp that runs processes or touches files.
const ELISP_EFFECTS =
  /\((shell-command(-to-string)?|async-shell-command|call-process(-shell-command|-region)?|process-lines|start-process(-shell-command)?|make-process|delete-file|delete-directory|write-region|write-file|copy-file|rename-file|make-symbolic-link|add-name-to-file|url-retrieve(-synchronously)?|eval|load|require|open-network-stream|make-network-process)\b/;

export const emacsRule: Rule = (program, args, rc) => {
  if (!args.some((x) => /^--?(batch|script)$|^-x$/.test(x.value)))
    return interactive('is an interactive editor')(program, args, rc);
  for (let i = 0; i < args.length; i++) {
    const v = (args[i] as Arg).value;
    const m = /^--?(eval|execute)(?:=(.*))?$/.exec(v);
    if (!m) continue;
    const code = m[2] ?? args[++i]?.value ?? '';
    for (const call of code.matchAll(
      /\((?:shell-command(?:-to-string)?|async-shell-command)\s+"((?:\\.|[^"])*)"/g,
    ))
      rc.nested((call[1] ?? '').replace(/\\(.)/g, '$1'), { via: `${program} shell-command` });
    if (ELISP_EFFECTS.test(code))
      rc.add({
        class: 'unknown',
        risk: 'high',
        program,
        reason: `${program} --eval runs Lisp that starts processes, changes files or uses the network`,
      });
  }
  safe(rc, program, 'batch mode');
};

/** tar options whose value is a program tar runs (compressor, rsh, volume scripts, per-file command). */
const TAR_COMMAND_LONG =
  /^--(to-command|checkpoint-action|use-compress-program|rsh-command|info-script|new-volume-script)(=|$)/;

export function tarRule(recurse: Recurse): Rule {
  void recurse;
  return (program, args, rc) => {
    for (let i = 0; i < args.length; i++) {
      const v = (args[i] as Arg).value;
      let command: string | undefined;
      if (TAR_COMMAND_LONG.test(v))
        command = v.includes('=') ? v.slice(v.indexOf('=') + 1) : args[i + 1]?.value;
      else if (/^-[a-zA-Z]*[IF]/.test(v) || (i === 0 && /^[a-zA-Z]*[IF][a-zA-Z]*$/.test(v))) {
        // Short -I PROG (--use-compress-program) and -F SCRIPT (--info-script), bundled or not.
        const letters = v.replace(/^-/, '');
        const at = letters.search(/[IF]/);
        command = letters.slice(at + 1) || args[i + 1]?.value;
      }
      if (command === undefined) continue;
      if (command !== '') rc.nested(command.replace(/^exec=/, ''), { via: `${program} external command` });
      rc.add({
        class: 'unknown',
        risk: 'high',
        program,
        reason: `${program} told to run an external command`,
      });
      return;
    }
    extractInto(program, args, rc);
  };
}

/** tar -x / unzip write where -C/-d say (outside the workspace: approval; system dirs: never). */
export const extractInto: Rule = (program, args, rc) => {
  const extracting =
    program === 'unzip' ||
    args.some(
      (a, i) =>
        /^--extract$|^--get$/.test(a.value) ||
        (/^-?[a-zA-Z]*x/.test(a.value) && i === 0) ||
        /^-[a-zA-Z]*x/.test(a.value),
    );
  const at = args.findIndex((a) => /^(-C|--directory|-d)$/.test(a.value) || /^--directory=/.test(a.value));
  if (extracting && at !== -1) {
    const v = (args[at] as Arg).value;
    const dir: Arg = v.includes('=')
      ? { ...(args[at] as Arg), value: v.slice(v.indexOf('=') + 1) }
      : (args[at + 1] ?? lit(''));
    judgeWrite(program, { ...dir, value: path.join(dir.value, '<extracted>') }, 'overwrite', rc);
  }
  if (extracting && args.some((a) => /^(-P|--absolute-names)$/.test(a.value)))
    rc.add({ class: 'destructive', risk: 'high', program, reason: `${program} extracts to absolute paths` });
  safe(rc, program);
};

/** openssl: s_client/s_server and friends are network clients and servers; the rest is local. */
export const opensslRule: Rule = (program, args, rc) => {
  const sub = args[0]?.value ?? '';
  const remote =
    /^(s_client|s_server|s_time)$/.test(sub) ||
    (/^(ocsp|cmp|req|x509|ca)$/.test(sub) && args.some((a) => /^-(url|host|server|connect)$/.test(a.value)));
  if (remote)
    return rc.add({
      class: 'network',
      risk: 'high',
      program: `${program} ${sub}`,
      reason: `${program} ${sub} opens network connections`,
      fetches: true,
    });
  safe(rc, `${program} ${sub}`.trim());
};

/** Tools that run a command in new namespaces or under a faked root: ask, and judge the command. */
export const namespaceRule =
  (recurse: Recurse, valued: readonly string[]): Rule =>
  (program, args, rc) => {
    rc.add({
      class: 'unknown',
      risk: program === 'fakeroot' ? 'medium' : 'high',
      program,
      reason: `${program} runs a command in new namespaces or as a (fake) root user`,
      ...(program === 'fakeroot' ? { sessionKey: 'unknown:fakeroot' } : {}),
    });
    const rest = skipThen(valued)(args);
    if (rest.length > 0) recurse(rest, rc);
  };

/** machinectl / loginctl: power verbs and root shells are never run; inspection is fine. */
export const sessionManagerRule: Rule = (program, args, rc) => {
  const sub = parseOpts(args, { valued: 'HMpsnoP' }).operands[0]?.value ?? '';
  if (/^(poweroff|reboot|halt|suspend|hibernate|hybrid-sleep|suspend-then-hibernate|kexec)$/.test(sub))
    return never(`${sub} takes the machine down`)(program, args, rc);
  if (/^(shell|login)$/.test(sub))
    return never('opens a (root) shell in another machine or session')(program, args, rc);
  if (sub === '' || /^(list(-\w+)?|show(-\w+)?|status|\w+-status|help|--version|image-status)$/.test(sub))
    return safe(rc, `${program} ${sub}`.trim());
  rc.add({
    class: 'destructive',
    risk: 'high',
    program: `${program} ${sub}`,
    reason: `${program} ${sub} changes sessions, users or machines`,
  });
};

/** A package manager's configuration decides which registry, shell and scripts later commands use. */
export function judgePackageConfig(
  program: string,
  sub: string,
  rest: readonly Arg[],
  rc: RuleContext,
): boolean {
  const verb = rest.find((a) => !a.value.startsWith('-'))?.value ?? '';
  const readsOnly =
    /^(get|list|ls|show|debug|--list|-l)$/.test(verb) ||
    rest.some((a) => /^(--list|-l|--get|--show-origin)$/.test(a.value));
  const writes =
    sub === 'set-script' ||
    (sub === 'set' && ['npm', 'yarn', 'pnpm'].includes(program)) ||
    (sub === 'pkg' && /^(set|delete|fix)$/.test(verb)) ||
    (/^(config|c)$/.test(sub) && !readsOnly && rest.length > 0) ||
    (program === 'go' && sub === 'env' && rest.some((a) => /^-(w|u)$/.test(a.value)));
  if (!writes) return false;
  rc.add({
    class: 'destructive',
    risk: 'high',
    program: `${program} ${sub}`,
    reason: `${program} ${sub} changes configuration that decides what later installs and scripts run`,
  });
  return true;
}

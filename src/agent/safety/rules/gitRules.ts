import * as path from 'node:path';
import { type Arg, parseOpts, type RuleContext } from './commandTypes.ts';
import { judgeWrite } from './pathRules.ts';
import { GREP_HINT, network, type Rule, safe, useTool } from './programRules.ts';

// git: global options (-C, -c) are followed, then the subcommand decides: network (push, fetch…),
// destructive (reset --hard, clean, checkout -- …), interactive (-i/-p), or ordinary.

const GIT_NETWORK = new Set([
  'push',
  'pull',
  'fetch',
  'clone',
  'ls-remote',
  'send-email',
  'request-pull',
  'svn',
  'p4',
  'daemon',
  'instaweb',
]);
const GIT_DESTRUCTIVE = new Set(['filter-branch', 'filter-repo', 'replace', 'prune', 'prune-packed', 'rm']);
const GIT_COMMAND_KEYS =
  /^(alias\.|core\.(pager|editor|sshcommand|fsmonitor|hookspath|gitproxy|askpass)|diff\.|filter\.|credential\.|sequence\.editor|gpg\.|uploadpack\.|protocol\.|merge\.|pager\.|web\.|browser\.|man\.|interactive\.)/i;

function gitDestructive(rc: RuleContext, what: string, risk: 'medium' | 'high' = 'medium'): void {
  const name = what.split(' ').slice(0, 2).join(' ');
  rc.add({
    class: 'destructive',
    risk,
    program: name,
    reason: what,
    sessionKey: risk === 'high' ? undefined : `destructive:${name}`,
  });
}

export const gitRule: Rule = (_program, args, rc) => {
  let i = 0;
  let cwd = rc.cwd;
  for (; i < args.length; i++) {
    const v = (args[i] as Arg).value;
    if (!v.startsWith('-')) break;
    const takesValue =
      v === '-C' || v === '-c' || /^--(git-dir|work-tree|namespace|exec-path|config-env)$/.test(v);
    const value = takesValue ? args[++i] : undefined;
    if (v === '-C' && value)
      cwd = value.exact
        ? cwd === undefined && !path.isAbsolute(value.value)
          ? undefined
          : path.resolve(cwd ?? '/', value.value)
        : undefined;
    const config = v === '-c' ? value?.value : v.startsWith('--config-env') ? 'config-env' : undefined;
    if (config !== undefined) {
      const [key = '', ...rest] = config.split('=');
      const setting = rest.join('=');
      if (/^alias\./i.test(key) && setting.startsWith('!')) rc.nested(setting.slice(1), { via: 'git alias' });
      else if (GIT_COMMAND_KEYS.test(key) || config === 'config-env') {
        // The value is a command git will run (core.sshCommand, core.pager, diff.external, …).
        if (!/^alias\./i.test(key) && setting !== '')
          rc.nested(setting.replace(/^!/, ''), { via: `git -c ${key}`, quiet: true });
        rc.add({
          class: 'unknown',
          risk: 'high',
          program: 'git',
          reason: `git -c ${key} can make git run arbitrary programs`,
        });
      }
    }
  }
  const grc = rc.withCwd(cwd);
  const sub = args[i]?.value ?? '';
  const rest = args.slice(i + 1);
  const opts = parseOpts(rest, {
    valued: 'mFCcbBtXsSUo',
    longValued: ['--message', '--file', '--author', '--date'],
  });
  const flagged = (...names: string[]) => opts.has(...names);
  const name = `git ${sub}`;
  if (!args[i]?.exact) {
    rc.add({
      class: 'unknown',
      risk: 'high',
      program: 'git',
      reason: 'git subcommand is computed at run time',
    });
    return;
  }
  // Options whose value is a command git runs: rebase --exec, clone/fetch --upload-pack, push --receive-pack.
  for (let k = 0; k < rest.length; k++) {
    const v = (rest[k] as Arg).value;
    const m = /^(--exec|-x|--upload-pack|-u|--receive-pack|--extcmd)(=(.*))?$/.exec(v);
    if (!m || (m[1] === '-u' && sub !== 'clone') || (m[1] === '-x' && sub !== 'rebase')) continue;
    grc.nested(m[3] ?? rest[k + 1]?.value ?? '', { via: `${name} ${m[1]}` });
  }
  if (
    GIT_NETWORK.has(sub) ||
    (sub === 'lfs' && /^(fetch|pull|push|clone)$/.test(opts.operands[0]?.value ?? ''))
  ) {
    const force =
      sub === 'push' &&
      (flagged('-f', '--force', '--force-with-lease', '--mirror', '--delete', '-d', '--prune') ||
        opts.operands.some((a) => /^\+|^:/.test(a.value)));
    grc.add({
      class: 'network',
      risk: force ? 'high' : 'medium',
      program: name,
      reason: force ? 'git push that rewrites or deletes remote history' : `${name} talks to a remote`,
      fetches: sub !== 'push',
      sessionKey: force ? undefined : `network:${name}`,
    });
    return;
  }
  const op0 = opts.operands[0]?.value ?? '';
  if (sub === 'bisect' && op0 === 'run') {
    grc.nested(
      opts.operands
        .slice(1)
        .map((a) => `'${a.value.replace(/'/g, "'\\''")}'`)
        .join(' '),
      { via: 'git bisect run' },
    );
  }
  // `git log --output=FILE`, `git diff -o` style writers.
  const output = rest.findIndex((a) => /^--output(=|$)/.test(a.value));
  if (output !== -1) {
    const v = (rest[output] as Arg).value;
    const file = v.includes('=') ? v.slice(v.indexOf('=') + 1) : (rest[output + 1]?.value ?? '');
    judgeWrite(name, { ...(rest[output] as Arg), value: file }, 'overwrite', grc);
  }
  switch (sub) {
    case 'grep':
      useTool(grc, name, 'Grep', GREP_HINT);
      return;
    case 'reset':
      if (flagged('--hard', '--merge', '--keep'))
        return gitDestructive(grc, 'git reset --hard discards uncommitted changes');
      return safe(grc, name);
    case 'clean':
      if (flagged('-n', '--dry-run')) return safe(grc, name);
      return gitDestructive(
        grc,
        'git clean deletes untracked files',
        flagged('-x', '-X') ? 'high' : 'medium',
      );
    case 'checkout':
      if (flagged('-b', '-B', '--orphan')) return safe(grc, name);
      if (
        rest.some((a) => a.value === '--') ||
        flagged('-f', '--force', '-p', '--patch') ||
        op0 === '.' ||
        opts.operands.length > 1
      ) {
        return gitDestructive(grc, 'git checkout of paths discards working-tree changes');
      }
      return safe(grc, name);
    case 'restore':
      if (flagged('--staged', '-S') && !flagged('--worktree', '-W')) return safe(grc, name);
      return gitDestructive(grc, 'git restore discards working-tree changes');
    case 'switch':
      if (flagged('-f', '--force', '--discard-changes'))
        return gitDestructive(grc, 'git switch --discard-changes');
      return safe(grc, name);
    case 'branch':
      if (flagged('-D', '-d', '--delete', '-M', '-C'))
        return gitDestructive(grc, 'git branch -D deletes a branch');
      return safe(grc, name);
    case 'tag':
      if (flagged('-d', '--delete')) return gitDestructive(grc, 'git tag -d deletes a tag');
      return safe(grc, name);
    case 'stash':
      if (op0 === 'drop' || op0 === 'clear')
        return gitDestructive(grc, `git stash ${op0} deletes stashed work`);
      // `git stash` / push / save: the user's uncommitted work leaves the working tree.
      if (op0 === '' || op0 === 'push' || op0 === 'save' || op0.startsWith('-'))
        return gitDestructive(grc, 'git stash moves uncommitted changes out of the working tree');
      return safe(grc, name);
    case 'reflog':
      if (op0 === 'expire' || op0 === 'delete')
        return gitDestructive(grc, `git reflog ${op0} drops recovery points`, 'high');
      return safe(grc, name);
    case 'update-ref':
      if (flagged('-d')) return gitDestructive(grc, 'git update-ref -d deletes a ref');
      return safe(grc, name);
    case 'worktree':
      if (op0 === 'remove' || op0 === 'prune') return gitDestructive(grc, `git worktree ${op0}`);
      return safe(grc, name);
    case 'gc':
      if (opts.flags.get('--prune') === 'now' || opts.flags.get('--prune') === 'all') {
        return gitDestructive(grc, 'git gc --prune=now drops unreachable commits', 'high');
      }
      return safe(grc, name);
    case 'remote':
      if (['update', 'prune', 'show'].includes(op0))
        return network('medium', 'talks to a remote')(name, rest, grc, () => {});
      return safe(grc, name);
    case 'submodule':
      if (op0 === 'foreach') {
        const script = opts.operands
          .slice(1)
          .map((a) => a.value)
          .join(' ');
        grc.nested(script, { via: 'git submodule foreach' });
        return;
      }
      if (['update', 'add', 'sync'].includes(op0))
        return network('medium', 'fetches submodules')(name, rest, grc, () => {});
      return safe(grc, name);
    case 'config':
      if (flagged('--global', '--system') && !flagged('--get', '--get-all', '--list', '-l', '--get-regexp')) {
        return gitDestructive(grc, 'git config --global changes settings outside the workspace', 'high');
      }
      if (opts.operands.length >= 2 && GIT_COMMAND_KEYS.test(op0)) {
        const setting = opts.operands[1]?.value ?? '';
        grc.nested(setting.replace(/^!/, ''), { via: `git config ${op0}`, quiet: true });
        return grc.add({
          class: 'unknown',
          risk: 'high',
          program: name,
          reason: `setting ${op0} makes git run programs`,
        });
      }
      return safe(grc, name);
    case 'archive':
      if (rest.some((a) => a.value.startsWith('--remote')))
        return network('medium', 'reads a remote archive')(name, rest, grc, () => {});
      return safe(grc, name);
    case 'add':
    case 'commit':
    case 'rebase':
      if (flagged('-i', '--interactive', '-p', '--patch') || (sub === 'add' && flagged('-e', '--edit'))) {
        return grc.add({
          class: 'interactive',
          risk: 'low',
          program: name,
          reason: `${name} -i/-p needs an interactive terminal`,
          suggestion: 'Use non-interactive forms (git add <paths>, git commit -m "…").',
        });
      }
      return safe(grc, name);
    case 'mergetool':
    case 'difftool':
      return grc.add({
        class: 'interactive',
        risk: 'low',
        program: name,
        reason: `${name} opens an external tool`,
      });
    default:
      if (GIT_DESTRUCTIVE.has(sub))
        return gitDestructive(grc, `${name} deletes or rewrites data`, sub === 'rm' ? 'medium' : 'high');
      return safe(grc, name);
  }
};

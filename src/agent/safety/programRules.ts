import * as path from 'node:path';
import { type Arg, parseOpts, type RuleContext, words } from './commandTypes.ts';
import { judgeDelete, judgeWrite, resolvePath } from './pathRules.ts';
import { judgePackageConfig } from './hostRules.ts';
import { judgePackageScript, scriptName } from './scriptRules.ts';

// Rules for programs whose meaning depends on a subcommand or on their operands: git, package
// managers, network clients, and the file readers/searchers that have a dedicated Keel tool.

export type Recurse = (argv: readonly Arg[], rc: RuleContext) => void;
export type Rule = (program: string, args: readonly Arg[], rc: RuleContext, recurse?: Recurse) => void;

export const lit = (value: string, exact = true): Arg => ({ value, exact, glob: false, substs: [] });

export function safe(rc: RuleContext, program: string, reason = 'ordinary command'): void {
  rc.add({ class: 'safe', risk: 'low', program, reason });
}

export const never =
  (what: string): Rule =>
  (program, _args, rc) =>
    rc.add({ class: 'never', risk: 'high', program, reason: `${program} ${what}` });

export const interactive =
  (
    what: string,
    suggestion = 'Interactive programs cannot run here (stdin is closed); use a non-interactive form.',
  ): Rule =>
  (program, _args, rc) =>
    rc.add({ class: 'interactive', risk: 'low', program, reason: `${program} ${what}`, suggestion });

// ---------- readers and searchers: use the dedicated tool ----------

const READ_HINT = 'Use Read to view a file (offset/limit for a range of lines) instead of cat/head/tail.';
const LS_HINT = 'Use LS to list a directory, or Glob to find files by name pattern.';
export const GREP_HINT = 'Use Grep to search file contents (regex, glob filter, context lines).';
const GLOB_HINT = 'Use Glob to find files by name pattern (e.g. "src/**/*.ts").';

export function useTool(rc: RuleContext, program: string, tool: string, suggestion: string): void {
  if (rc.stdoutToFile) {
    // `cat a b > c`, `ls > files.txt`: the output goes to a file, not to the model; not a read.
    rc.add({ class: 'safe', risk: 'low', program, reason: 'output is written to a file' });
    return;
  }
  rc.add({
    class: 'use_tool',
    risk: 'low',
    program,
    reason: `${program} duplicates the ${tool} tool`,
    suggestion,
  });
}

/** Reading stdin from a pipe or here-doc is filtering output, not reading files. */
function filtering(rc: RuleContext): boolean {
  return rc.stdin.kind === 'pipe' || rc.stdin.kind === 'heredoc';
}

const READER_VALUED: Record<string, string> = {
  head: 'nc',
  tail: 'ncs',
  nl: 'bdfhilnpsvw',
  od: 'AjNSstw',
  xxd: 'cglosn',
  hexdump: 'eFfns',
  bat: 'lLmrH',
};

export const reader: Rule = (program, args, rc) => {
  const opts = parseOpts(args, {
    valued: READER_VALUED[program] ?? '',
    longValued: ['--lines', '--bytes', '--pid', '--sleep-interval', '--language', '--line-range'],
  });
  if ((program === 'tail' && opts.has('-f', '-F', '--follow')) || program === 'less' || program === 'more') {
    rc.add({
      class: 'interactive',
      risk: 'low',
      program,
      reason: `${program} ${program === 'tail' ? '-f never ends' : 'is an interactive pager'}`,
      suggestion: READ_HINT,
    });
    return;
  }
  const files = opts.operands.filter((a) => a.value !== '-');
  if (files.length === 0 && (filtering(rc) || rc.stdin.kind === 'none')) {
    safe(rc, program, 'filters piped output');
    return;
  }
  useTool(rc, program, 'Read', READ_HINT);
};

export const searcher: Rule = (program, args, rc) => {
  const isRg = program === 'rg' || program === 'ag' || program === 'ack';
  const opts = parseOpts(args, {
    valued: isRg ? 'efgtTmABCjMrE' : 'efmABCdD',
    longValued: [
      '--regexp',
      '--file',
      '--max-count',
      '--context',
      '--after-context',
      '--before-context',
      '--glob',
      '--iglob',
      '--type',
      '--type-not',
      '--threads',
      '--replace',
      '--max-depth',
      '--sort',
      '--sortr',
    ],
  });
  if (isRg && opts.has('--files')) {
    useTool(rc, program, 'Glob', GLOB_HINT);
    return;
  }
  const explicitPattern = opts.has('-e', '-f', '--regexp', '--file');
  const paths = explicitPattern ? opts.operands : opts.operands.slice(1);
  const recursive = opts.has('-r', '-R', '--recursive', '--dereference-recursive');
  const readsTree = isRg ? !filtering(rc) : recursive;
  if (paths.length === 0 && !readsTree && (filtering(rc) || rc.stdin.kind === 'none')) {
    safe(rc, program, 'filters piped output');
    return;
  }
  useTool(rc, program, 'Grep', GREP_HINT);
};

export const lister: Rule = (program, _args, rc) => useTool(rc, program, 'LS', LS_HINT);

// ---------- network ----------

const LOOPBACK =
  /^(?:[a-z]+:\/\/)?(?:localhost|127(?:\.\d{1,3}){3}|\[::1\]|0\.0\.0\.0)(?::\d+)?(?:[/?#].*)?$/i;

/** HTTP clients: loopback URLs (a local dev server) run; anything else asks. */
/** Files a download writes: `-o/-O` of curl and wget, or (wget, curl -O) the URL's last segment. */
function downloadTargets(program: string, args: readonly Arg[], urls: readonly Arg[]): string[] {
  const opts = parseOpts(args, {
    valued: program === 'wget' ? 'OoPeUTtaQ' : 'oTdHuXAeEwmrKxYyzb',
    longValued: ['--output', '--output-document', '--directory-prefix', '--data', '--header', '--user'],
  });
  const named =
    opts.get('--output') ??
    opts.get('--output-document') ??
    (program === 'curl' ? opts.get('-o') : opts.get('-O'));
  if (named !== undefined) return [named];
  const byUrl = program === 'wget' || opts.has('-O', '--remote-name', '--remote-name-all');
  if (!byUrl) return [];
  return urls.map((u) => {
    const p = u.value.replace(/^[a-z]+:\/\/[^/]*/i, '').replace(/[?#].*$/, '');
    const base = p.split('/').pop() ?? '';
    return base === '' ? 'index.html' : base;
  });
}

export const httpClient: Rule = (program, args, rc) => {
  const targets = args.filter(
    (a) => !a.value.startsWith('-') && /^[a-z]+:\/\/|^[\w.-]+(:\d+)?(\/|$)/i.test(a.value),
  );
  for (const file of downloadTargets(program, args, targets)) {
    const abs = file === '-' ? undefined : resolvePath(file, rc);
    if (abs) rc.markDownload(abs);
  }
  const loopback = targets.length > 0 && targets.every((a) => a.exact && LOOPBACK.test(a.value));
  if (loopback) {
    rc.add({ class: 'safe', risk: 'low', program, reason: 'talks to a local server', fetches: true });
    return;
  }
  rc.add({
    class: 'network',
    risk: 'medium',
    program,
    reason: `${program} reaches the network`,
    fetches: true,
    sessionKey: `network:${program}`,
  });
};

export const socketTool: Rule = (program, args, rc) => {
  const execs =
    args.some((a) => /^-(e|c)$|^--(exec|sh-exec|lua-exec)/.test(a.value)) ||
    args.some((a) => /EXEC:|SYSTEM:/i.test(a.value));
  if (execs) {
    rc.add({
      class: 'never',
      risk: 'high',
      program,
      reason: `${program} wiring a shell to a network socket (reverse shell)`,
    });
    return;
  }
  rc.add({
    class: 'network',
    risk: 'high',
    program,
    reason: `${program} opens raw network connections`,
    fetches: true,
  });
};

export const sshRule: Rule = (program, args, rc) => {
  if (program !== 'ssh') {
    rc.add({
      class: 'network',
      risk: 'high',
      program,
      reason: `${program} transfers files over the network`,
      fetches: true,
    });
    return;
  }
  const opts = parseOpts(args, { valued: 'bcDEeFIiJLlmOopQRSWw', permute: false });
  if (opts.operands.length < 2) {
    rc.add({
      class: 'interactive',
      risk: 'low',
      program,
      reason: 'ssh without a remote command opens an interactive session',
      suggestion: 'Interactive sessions cannot run here; ask the user to run it.',
    });
    return;
  }
  rc.add({
    class: 'network',
    risk: 'high',
    program,
    reason: 'runs a command on a remote host over ssh',
    fetches: true,
  });
};

export const network =
  (risk: 'low' | 'medium' | 'high', what: string): Rule =>
  (program, _args, rc) =>
    rc.add({
      class: 'network',
      risk,
      program,
      reason: `${program} ${what}`,
      sessionKey: `network:${program}`,
    });

export const rsyncRule: Rule = (program, args, rc) => {
  const opts = parseOpts(args, {
    valued: 'eTB',
    longValued: ['--rsh', '--exclude', '--include', '--filter'],
  });
  if (opts.operands.some((a) => /^[\w.@-]+:|^rsync:\/\//.test(a.value))) {
    rc.add({
      class: 'network',
      risk: 'high',
      program,
      reason: 'rsync to or from a remote host',
      fetches: true,
    });
    return;
  }
  const dest = opts.operands.at(-1);
  if (dest && opts.has('--delete', '--delete-before', '--delete-after', '--delete-during', '--del')) {
    judgeDelete('rsync --delete', [dest], true, rc);
  }
  if (dest) judgeWrite(program, dest, 'create', rc);
  safe(rc, program);
};

// ---------- package managers ----------

const PM_NETWORK: Record<string, RegExp> = {
  npm: /^(install|i|in|ins|inst|insta|instal|isnt|isnta|isntal|add|ci|update|up|upgrade|udpate|publish|unpublish|deprecate|login|adduser|logout|owner|access|token|dist-tag|star|search|view|info|show|v|outdated|audit|exec|x|create|init|pkg|hook|team|org|profile)$/,
  yarn: /^(install|add|upgrade|up|upgrade-interactive|publish|dlx|create|global|login|npm|unplug|info|outdated|audit|import)$/,
  pnpm: /^(install|i|add|update|up|upgrade|publish|dlx|create|fetch|import|audit|outdated|install-test|it|env|self-update)$/,
  bun: /^(install|i|add|a|update|upgrade|publish|x|create|c|link|pm)$/,
  pip: /^(install|download|wheel|index|search)$/,
  pipx: /^(install|run|inject|upgrade|upgrade-all|reinstall|reinstall-all)$/,
  uv: /^(add|sync|lock|pip|tool|python|publish|venv)$/,
  poetry: /^(add|install|update|lock|publish|self|source)$/,
  pdm: /^(add|install|update|lock|publish|sync)$/,
  gem: /^(install|update|push|fetch|sources|yank|owner|signin)$/,
  bundle: /^(install|update|add|outdated|lock|cache|package)$/,
  cargo: /^(install|publish|login|yank|owner|search|add|fetch|update|vendor)$/,
  go: /^(get|install)$/,
  composer: /^(require|install|update|create-project|global|self-update|outdated)$/,
  conda: /^(install|create|update|upgrade|env|remove|uninstall|search)$/,
  mamba: /^(install|create|update|upgrade|env|remove|uninstall|search)$/,
  deno: /^(install|upgrade|add|publish|cache)$/,
  dotnet: /^(add|restore|tool|nuget|new)$/,
};

/** System package managers need root and change the machine: always ask. */
export const systemPackages: Rule = (program, args, rc) => {
  const sub = parseOpts(args, { valued: 'oct' }).operands[0]?.value ?? '';
  if (/^(list|info|search|show|policy|depends|rdepends|--version|madison)$/.test(sub))
    return safe(rc, program);
  rc.add({
    class: 'network',
    risk: 'high',
    program,
    reason: `${program} installs or changes system packages`,
    fetches: true,
  });
};

export function packageManager(
  recurseExec: (program: string, args: readonly Arg[], rc: RuleContext) => void,
): Rule {
  return (program, args, rc, recurse) => {
    const opts = parseOpts(args, {
      valued: program === 'npm' ? 'wC' : program === 'go' ? 'C' : '',
      longValued: [
        '--prefix',
        '--workspace',
        '--filter',
        '--cwd',
        '--dir',
        '--registry',
        '--manifest-path',
        '--package',
      ],
      permute: false,
    });
    const sub = opts.operands[0]?.value ?? '';
    const rest = opts.operands.slice(1);
    if (!opts.operands[0]?.exact && opts.operands.length > 0) {
      rc.add({
        class: 'unknown',
        risk: 'high',
        program,
        reason: `${program} subcommand is computed at run time`,
      });
      return;
    }
    if (judgePackageConfig(program, sub, rest, rc)) return;
    // Runs a binary the project already installed: judge that command itself.
    const local =
      (program === 'bundle' && sub === 'exec') ||
      (['uv', 'poetry', 'pdm'].includes(program) && sub === 'run') ||
      (['pnpm', 'yarn'].includes(program) && sub === 'exec');
    if (local && recurse) {
      if (rest.length === 0) safe(rc, `${program} ${sub}`);
      else recurse(rest, rc);
      return;
    }
    const dlx =
      (['pnpm', 'yarn'].includes(program) && sub === 'dlx') ||
      (program === 'bun' && sub === 'x') ||
      (program === 'pipx' && sub === 'run');
    if (dlx || (program === 'npm' && (sub === 'exec' || sub === 'x'))) {
      recurseExec(dlx ? 'dlx' : 'exec', rest, rc);
      return;
    }
    if (program === 'go' && sub === 'mod' && rest[0]?.value === 'download') {
      return network('medium', 'downloads modules')(program, args, rc, () => {});
    }
    if (program === 'go' && sub === 'install' && !rest.some((a) => a.value.includes('@')))
      return safe(rc, `${program} ${sub}`);
    const bareYarn = program === 'yarn' && opts.operands.length === 0;
    const pattern = PM_NETWORK[program];
    if (
      bareYarn ||
      (pattern?.test(sub) && !(sub === 'init' && args.some((a) => /^(-y|--yes)$/.test(a.value))))
    ) {
      const global = opts.has('-g', '--global') || sub === 'global';
      rc.add({
        class: 'network',
        risk: global || sub === 'publish' ? 'high' : 'medium',
        program: `${program} ${sub}`.trim(),
        reason: `${program} ${sub} downloads or publishes packages${global ? ' (global install outside the workspace)' : ''}`,
        fetches: true,
        sessionKey: global ? undefined : `network:${program} ${sub}`.trim(),
      });
      return;
    }
    if (program === 'npm' && sub === 'init' && !args.some((a) => /^(-y|--yes)$/.test(a.value))) {
      rc.add({
        class: 'interactive',
        risk: 'low',
        program: 'npm init',
        reason: 'npm init prompts for answers',
        suggestion: 'Use npm init -y.',
      });
      return;
    }
    if (args.some((a) => /^--(script-shell|shell|node-options|userconfig|globalconfig)(=|$)/.test(a.value))) {
      rc.add({
        class: 'unknown',
        risk: 'high',
        program,
        reason: `${program} told to use another shell or configuration`,
      });
      return;
    }
    const script = ['npm', 'yarn', 'pnpm', 'bun'].includes(program)
      ? scriptName(program, sub, rest)
      : undefined;
    if (script) judgePackageScript(program, script, rc);
    safe(rc, `${program} ${sub}`.trim());
  };
}

// Well-known development tools: `npx <tool>` runs the workspace's copy (or a harmless download).
export const DEV_TOOLS = new Set(
  words(
    'tsc tsx ts-node eslint prettier biome jest vitest mocha ava tap c8 nyc playwright cypress',
    'esbuild vite webpack rollup parcel turbo nx next nuxt astro svelte-kit svelte-check vue-tsc',
    'tailwindcss postcss stylelint knip depcheck lerna changeset semantic-release tsup unbuild swc',
    'babel jsdoc typedoc storybook prisma drizzle-kit ts-jest vsce ncu npm-check-updates concurrently',
    'nodemon serve http-server husky lint-staged commitlint markdownlint cspell tslint standard xo',
    'uvu oxlint rslint dprint madge size-limit publint attw api-extractor wrangler',
  ),
);

export function npxRule(recurse: Recurse): Rule {
  return (program, args, rc) => {
    const opts = parseOpts(args, {
      valued: 'pc',
      longValued: ['--package', '--call', '--node-options', '--shell'],
      permute: false,
    });
    const call = opts.get('-c') ?? opts.get('--call');
    if (call !== undefined) {
      rc.nested(call, { via: `${program} -c` });
      return;
    }
    const head = opts.operands[0];
    if (!head) return safe(rc, program);
    const bin = head.value.replace(/^(@[^/]+\/)?([^@]+)(@.*)?$/, '$2');
    const pinned =
      /@[^/]*$/.test(head.value.slice(1)) || head.value.startsWith('@') || opts.has('-p', '--package');
    const local = head.exact && rc.isFile(path.join(rc.workspaceRoot, 'node_modules', '.bin', bin));
    if (program !== 'dlx' && head.exact && (local || (DEV_TOOLS.has(bin) && !pinned))) {
      recurse([lit(bin), ...opts.operands.slice(1)], rc);
      return;
    }
    rc.add({
      class: 'network',
      risk: 'medium',
      program: `npx ${head.value}`,
      reason: `downloads and runs the package ${head.value}`,
      fetches: true,
      sessionKey: `network:npx ${head.value}`,
    });
  };
}

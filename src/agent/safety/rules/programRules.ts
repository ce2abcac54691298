import { type Arg, parseOpts, type RuleContext } from './commandTypes.ts';
import { judgeDelete, judgeWrite, resolvePath } from './pathRules.ts';

// Rules for programs whose meaning depends on a subcommand or on their operands: network clients
// and the file readers/searchers that have a dedicated Keel tool (package managers: packageRules.ts).

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

/** HTTP clients: every request asks, loopback included (its own session key). */
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
  // Loopback asks too: a local Docker API, `kubectl proxy`, Redis or an admin panel is one request away.
  const loopback = targets.length > 0 && targets.every((a) => a.exact && LOOPBACK.test(a.value));
  if (loopback) {
    rc.add({
      class: 'network',
      risk: 'medium',
      program,
      reason: `${program} talks to a server on this machine (loopback)`,
      fetches: true,
      sessionKey: `network:${program} loopback`,
    });
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

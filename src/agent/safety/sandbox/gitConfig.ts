// The config of a repository a sandboxed command created (`git init`, `git clone`, a submodule) keeps
// only keys that decide nothing about what runs: git reads dozens that do (core.fsmonitor,
// core.hooksPath, core.pager, core.editor, core.sshCommand, diff/filter/merge drivers, aliases,
// credential helpers, include.path, url.*.insteadOf, http.proxy…), and new ones keep appearing, so
// the list is of what may stay, not of what must go. Everything else is dropped and named.

/** `section.key` or `section.*.key` (any subsection), lower-case. */
const KEEP: readonly string[] = [
  'core.repositoryformatversion',
  'core.filemode',
  'core.bare',
  'core.logallrefupdates',
  'core.ignorecase',
  'core.precomposeunicode',
  'core.symlinks',
  'core.autocrlf',
  'core.eol',
  'core.safecrlf',
  'core.sparsecheckout',
  'core.sparsecheckoutcone',
  'core.worktree',
  'core.compression',
  'core.quotepath',
  'core.untrackedcache',
  'core.splitindex',
  'core.commitgraph',
  'core.checkstat',
  'core.trustctime',
  'extensions.objectformat',
  'extensions.refstorage',
  'extensions.worktreeconfig',
  'extensions.partialclone',
  'extensions.noop',
  'init.defaultbranch',
  'user.name',
  'user.email',
  'user.signingkey',
  'remote.*.url',
  'remote.*.pushurl',
  'remote.*.fetch',
  'remote.*.push',
  'remote.*.tagopt',
  'remote.*.mirror',
  'remote.*.prune',
  'remote.*.promisor',
  'remote.*.partialclonefilter',
  'branch.*.remote',
  'branch.*.merge',
  'branch.*.rebase',
  'branch.*.pushremote',
  'branch.*.description',
  'submodule.*.url',
  'submodule.*.active',
  'submodule.*.branch',
  'submodule.active',
  'pull.rebase',
  'pull.ff',
  'push.default',
  'push.autosetupremote',
  'fetch.prune',
  'gc.auto',
  'gc.autodetach',
  'index.version',
  'lfs.repositoryformatversion',
  'advice.detachedhead',
  'commit.gpgsign',
  'merge.conflictstyle',
];

function kept(section: string, subsection: string | undefined, key: string, submodule: boolean): boolean {
  const name = (subsection === undefined ? `${section}.${key}` : `${section}.*.${key}`).toLowerCase();
  // A submodule's git dir names its working tree; a repository's own config has no reason to.
  if (name === 'core.worktree') return submodule;
  return KEEP.includes(name);
}

export interface SanitizedConfig {
  readonly text: string;
  /** `section[.sub].key` of every entry dropped; a line git might read some other way is named as-is. */
  readonly dropped: readonly string[];
}

const HEADER = /^\s*\[\s*([A-Za-z0-9][A-Za-z0-9.-]*)(?:\s+"((?:[^"\\\n]|\\.)*)")?\s*\](.*)$/;
const ENTRY = /^\s*([A-Za-z][A-Za-z0-9-]*)\s*(?:=(.*))?$/;

/** Rebuilds a git config file from the entries that may stay (comments and layout are not kept). */
export function sanitizeGitConfig(text: string, options: { submodule?: boolean } = {}): SanitizedConfig {
  const lines = text.split(/\r?\n/);
  const dropped: string[] = [];
  const out: string[] = [];
  let section: string | undefined;
  let subsection: string | undefined;
  let header: string | undefined;
  let emittedHeader: string | undefined;
  for (let i = 0; i < lines.length; i++) {
    let line = lines[i] ?? '';
    const trimmed = line.trim();
    if (trimmed === '' || trimmed.startsWith('#') || trimmed.startsWith(';')) continue;
    const h = HEADER.exec(line);
    if (h) {
      const name = h[1] ?? '';
      // `[section.sub]`: the old spelling of a subsection.
      const dot = h[2] === undefined ? name.indexOf('.') : -1;
      section = dot > 0 ? name.slice(0, dot) : name;
      subsection = dot > 0 ? name.slice(dot + 1) : h[2];
      header = line.slice(0, line.length - (h[3] ?? '').length).trim();
      line = h[3] ?? '';
      if (line.trim() === '' || /^\s*[#;]/.test(line)) continue;
    }
    // A value continued on the next line (trailing backslash) is never one worth keeping.
    let continued = false;
    while (/(^|[^\\])(\\\\)*\\$/.test(line)) {
      continued = true;
      i++;
      line = line.slice(0, -1) + (lines[i] ?? '');
      if (i >= lines.length) break;
    }
    const e = ENTRY.exec(line);
    const key = e?.[1];
    if (!e || !key || section === undefined) {
      dropped.push(line.trim().slice(0, 80));
      continue;
    }
    const full = `${section}${subsection === undefined ? '' : `.${subsection}`}.${key}`;
    if (continued || !kept(section, subsection, key, options.submodule === true)) {
      dropped.push(full);
      continue;
    }
    if (emittedHeader !== header) {
      out.push(header ?? '');
      emittedHeader = header;
    }
    out.push(`\t${key}${e[2] === undefined ? '' : ` =${e[2]}`}`);
  }
  return { text: out.length > 0 ? `${out.join('\n')}\n` : '', dropped };
}

import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseFrontmatter } from './frontmatter.ts';

// Agent Skills discovery. The index (name + description) is snapshotted once at session start and
// frozen into the system prompt (P1); bodies come back later as tool results (P3). Invalid skills are
// reported, never silently dropped.

export type SkillSource = 'bundled' | 'user' | 'workspace';

export interface SkillEntry {
  readonly name: string;
  readonly description: string;
  readonly source: SkillSource;
  /** Absolute folder of the skill. */
  readonly dir: string;
  /** Absolute path of SKILL.md. */
  readonly file: string;
  /** Body (after the frontmatter) as it was at discovery time. */
  readonly body: string;
  readonly metadata: Readonly<Record<string, string>>;
  /** Supporting files, relative to `dir`, sorted. */
  readonly files: readonly string[];
}

export interface SkillProblem {
  readonly level: 'error' | 'warning';
  readonly source: SkillSource;
  /** The SKILL.md (or folder) concerned. */
  readonly path: string;
  readonly message: string;
}

export interface SkillIndex {
  /** Valid skills, sorted by name; one per name (workspace > user > bundled). */
  readonly skills: readonly SkillEntry[];
  readonly problems: readonly SkillProblem[];
}

export interface DiscoverOptions {
  /** Keel's own skills (the repository's / extension's `skills/`). */
  readonly bundledDir?: string;
  /** Workspace root; skills are read from `<root>/.agents/skills/`. */
  readonly workspaceRoot?: string;
  /** User-level skills folder; `null` disables it. Default `~/.agents/skills`. */
  readonly userDir?: string | null;
}

export const NAME_PATTERN = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;
export const MAX_NAME = 64;
export const MAX_DESCRIPTION = 1024;
const MAX_SUPPORTING_FILES = 50;

/** The `skills/` folder next to the sources (valid when running from the repository). */
export function defaultBundledSkillsDir(): string {
  return fileURLToPath(new URL('../../../skills/', import.meta.url));
}

export function defaultUserSkillsDir(): string {
  return path.join(os.homedir(), '.agents', 'skills');
}

function listSupportingFiles(dir: string): string[] {
  const out: string[] = [];
  const walk = (rel: string) => {
    if (out.length >= MAX_SUPPORTING_FILES) return;
    let entries: fs.Dirent[];
    try {
      entries = fs.readdirSync(path.join(dir, rel), { withFileTypes: true });
    } catch {
      return;
    }
    for (const entry of entries.sort((a, b) => (a.name < b.name ? -1 : 1))) {
      if (entry.name.startsWith('.')) continue;
      const child = rel ? `${rel}/${entry.name}` : entry.name;
      if (entry.isDirectory()) walk(child);
      else if (entry.isFile() && child !== 'SKILL.md' && out.length < MAX_SUPPORTING_FILES) out.push(child);
    }
  };
  walk('');
  return out.sort();
}

export type ParsedSkill =
  | { readonly ok: true; readonly entry: SkillEntry }
  | { readonly ok: false; readonly message: string };

/** Parses and validates one skill folder against the Agent Skills rules. */
export function loadSkill(dir: string, source: SkillSource): ParsedSkill {
  const file = path.join(dir, 'SKILL.md');
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return { ok: false, message: code === 'ENOENT' ? 'missing SKILL.md' : `cannot read SKILL.md (${code})` };
  }
  const parsed = parseFrontmatter(text);
  if (!parsed.ok) return { ok: false, message: parsed.error };
  const folder = path.basename(dir);
  const { name, description, metadata } = parsed.data;
  const errors: string[] = [];
  if (typeof name !== 'string' || name.length === 0) errors.push('frontmatter field "name" is required');
  else {
    if (name.length > MAX_NAME) errors.push(`"name" is ${name.length} characters; the limit is ${MAX_NAME}`);
    if (!NAME_PATTERN.test(name)) {
      errors.push(`"name" must be lowercase letters, digits and single hyphens (got "${name}")`);
    }
    if (name !== folder) errors.push(`"name" ("${name}") must equal the folder name ("${folder}")`);
  }
  if (typeof description !== 'string' || description.trim().length === 0) {
    errors.push('frontmatter field "description" is required');
  } else if (description.length > MAX_DESCRIPTION) {
    errors.push(`"description" is ${description.length} characters; the limit is ${MAX_DESCRIPTION}`);
  }
  if (metadata !== undefined && typeof metadata === 'string' && metadata !== '') {
    errors.push('"metadata" must be a map of string keys to string values');
  }
  if (parsed.body.trim().length === 0) errors.push('the skill has no instructions after the frontmatter');
  if (errors.length > 0) return { ok: false, message: errors.join('; ') };
  return {
    ok: true,
    entry: {
      name: name as string,
      description: (description as string).replace(/\s+/g, ' ').trim(),
      source,
      dir,
      file,
      body: parsed.body.trim(),
      metadata: typeof metadata === 'object' ? metadata : {},
      files: listSupportingFiles(dir),
    },
  };
}

/** The canonical path of `p` when it resolves inside `fence` (already canonical), else undefined. */
function realInside(fence: string, p: string): string | undefined {
  try {
    const real = fs.realpathSync(p);
    const rel = path.relative(fence, real);
    return rel === '' || (rel !== '..' && !rel.startsWith(`..${path.sep}`) && !path.isAbsolute(rel))
      ? real
      : undefined;
  } catch {
    return undefined;
  }
}

function scanRoot(
  root: string,
  source: SkillSource,
  problems: SkillProblem[],
  confineTo?: string,
): SkillEntry[] {
  let entries: fs.Dirent[];
  try {
    entries = fs.readdirSync(root, { withFileTypes: true });
  } catch {
    return [];
  }
  const found: SkillEntry[] = [];
  for (const entry of entries.sort((a, b) => (a.name < b.name ? -1 : 1))) {
    if (entry.name.startsWith('.')) continue;
    const dir = path.join(root, entry.name);
    let isDir = entry.isDirectory();
    if (entry.isSymbolicLink()) {
      try {
        isDir = fs.statSync(dir).isDirectory();
      } catch {
        isDir = false;
      }
    }
    if (!isDir) continue;
    // A workspace's skill folder or SKILL.md may link only within the workspace: a cloned repository
    // could otherwise serve any file of the user's that happens to carry a frontmatter as a skill.
    if (confineTo !== undefined) {
      const fence = realInside(confineTo, confineTo) ?? path.resolve(confineTo);
      const skillFile = path.join(dir, 'SKILL.md');
      if (!realInside(fence, dir) || (fs.existsSync(skillFile) && !realInside(fence, skillFile))) {
        problems.push({
          level: 'error',
          source,
          path: skillFile,
          message: 'links to a place outside the workspace; it is not read',
        });
        continue;
      }
    }
    const result = loadSkill(dir, source);
    if (result.ok) found.push(result.entry);
    else problems.push({ level: 'error', source, path: path.join(dir, 'SKILL.md'), message: result.message });
  }
  return found;
}

export function discoverSkills(options: DiscoverOptions): SkillIndex {
  const problems: SkillProblem[] = [];
  const roots: [string, SkillSource, string?][] = [];
  if (options.bundledDir) roots.push([options.bundledDir, 'bundled']);
  const userDir = options.userDir === undefined ? defaultUserSkillsDir() : options.userDir;
  if (userDir) roots.push([userDir, 'user']);
  if (options.workspaceRoot)
    roots.push([path.join(options.workspaceRoot, '.agents', 'skills'), 'workspace', options.workspaceRoot]);
  const byName = new Map<string, SkillEntry>();
  for (const [root, source, confineTo] of roots) {
    for (const entry of scanRoot(root, source, problems, confineTo)) {
      const previous = byName.get(entry.name);
      if (previous) {
        problems.push({
          level: 'warning',
          source: previous.source,
          path: previous.file,
          message: `skill "${entry.name}" is overridden by the ${entry.source} skill at ${entry.file}`,
        });
      }
      byName.set(entry.name, entry);
    }
  }
  const skills = [...byName.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return { skills, problems };
}

/** One line per problem, for notices and `keel` output. */
export function formatSkillProblems(problems: readonly SkillProblem[]): string[] {
  return problems.map(
    (p) => `${p.level === 'error' ? 'Invalid skill' : 'Skill note'} (${p.source}) ${p.path}: ${p.message}`,
  );
}

/** The index block of the system prompt: names and routing descriptions only, sorted. */
export function renderSkillIndex(skills: readonly SkillEntry[]): string {
  if (skills.length === 0) return '';
  const lines = skills.map((s) => `- ${s.name}: ${s.description}`);
  return `# Skills (load with Skill when one matches)\n${lines.join('\n')}`;
}

/** Error codes (from `metadata.error-codes`) whose repeated occurrence should re-inject this skill. */
export function skillErrorCodes(entry: SkillEntry): string[] {
  return (entry.metadata['error-codes'] ?? '')
    .split(/[\s,]+/)
    .map((c) => c.trim().toUpperCase())
    .filter((c) => c.length > 0);
}

/**
 * The short form used when a skill is asked for again: its "Checklist" / "Key points" / "Reminder"
 * section when it has one, else its first lines.
 */
export function skillReminder(body: string): string {
  const lines = body.split('\n');
  const start = lines.findIndex((l) => /^#{1,4}\s*(checklist|key points|reminder)\b/i.test(l.trim()));
  if (start >= 0) {
    const level = /^#+/.exec(lines[start]!.trim())![0].length;
    const section: string[] = [];
    for (const line of lines.slice(start + 1)) {
      const heading = /^(#+)\s/.exec(line.trim());
      if (heading && heading[1]!.length <= level) break;
      section.push(line);
    }
    const text = section.join('\n').trim();
    if (text) return text.length > 1200 ? `${text.slice(0, 1200)}…` : text;
  }
  return lines
    .filter((l) => l.trim() && !l.trim().startsWith('#'))
    .slice(0, 6)
    .join('\n');
}

/** Re-reads a skill from disk (it may have been edited); falls back to the snapshot when it broke. */
export function readSkillNow(entry: SkillEntry): { entry: SkillEntry; note?: string } {
  const fresh = loadSkill(entry.dir, entry.source);
  if (fresh.ok && fresh.entry.name === entry.name) return { entry: fresh.entry };
  const reason = fresh.ok ? 'its name changed' : fresh.message;
  return {
    entry,
    note: `SKILL.md on disk is no longer valid (${reason}); showing the copy from session start.`,
  };
}

import * as fs from 'node:fs';
import * as path from 'node:path';
import { z } from 'zod';
import { parseFrontmatter } from '../skills/frontmatter.ts';

// Prompt files (slash commands) and agent files as the peers write them: Markdown with an OPTIONAL
// YAML frontmatter. Claude Code and Copilot users write tool lists three ways — `Read, Grep`,
// `[Read, Grep]` and a block list (`- Read`) — so all three are read; anything else is reported.

export type FileSource = 'workspace' | 'user';

export interface MarkdownFile {
  readonly data: Readonly<Record<string, string>>;
  readonly body: string;
}

/** Block lists (`key:` then `- item` lines) become flow lists, which the skills reader keeps raw. */
function flattenBlockLists(text: string): string {
  const lines = text.split('\n');
  const out: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const key = /^([A-Za-z0-9_-]+):\s*$/.exec(line);
    const items: string[] = [];
    let j = i + 1;
    while (key && j < lines.length && /^\s*-\s+/.test(lines[j]!)) {
      items.push(lines[j]!.replace(/^\s*-\s+/, '').trim());
      j++;
    }
    if (key && items.length > 0) {
      out.push(`${key[1]}: [${items.join(', ')}]`);
      i = j - 1;
    } else out.push(line);
  }
  return out.join('\n');
}

/** Frontmatter is optional here (a plain Markdown prompt file is valid); a broken one is an error. */
export function readMarkdownFile(
  text: string,
): { ok: true; file: MarkdownFile } | { ok: false; error: string } {
  const normalized = text.replace(/^\uFEFF/, '').replace(/\r\n/g, '\n');
  if (!normalized.startsWith('---\n')) return { ok: true, file: { data: {}, body: normalized } };
  const end = normalized.indexOf('\n---', 3);
  if (end < 0) return { ok: false, error: 'the frontmatter block is not closed by a "---" line' };
  const head = flattenBlockLists(normalized.slice(0, end));
  const parsed = parseFrontmatter(head + normalized.slice(end));
  if (!parsed.ok) return { ok: false, error: parsed.error };
  const data: Record<string, string> = {};
  for (const [k, v] of Object.entries(parsed.data)) if (typeof v === 'string') data[k] = v;
  return { ok: true, file: { data, body: parsed.body } };
}

/** `Read, Grep`, `[Read, "Grep"]` or a block list → names; `Bash(git status:*)` keeps its pattern. */
export function toolList(raw: string): string[] {
  const inner = raw.trim().replace(/^\[/, '').replace(/\]$/, '');
  const out: string[] = [];
  let depth = 0;
  let current = '';
  // Commas or blanks separate entries, except inside a pattern's parentheses (`Bash(git log:*)`).
  for (const ch of `${inner},`) {
    if (ch === '(') depth++;
    if (ch === ')') depth = Math.max(0, depth - 1);
    if ((ch === ',' || /\s/.test(ch)) && depth === 0) {
      if (current.trim()) out.push(current.trim());
      current = '';
      continue;
    }
    current += ch;
  }
  return out.map((t) => t.replace(/^["']|["']$/g, '').trim()).filter((t) => t.length > 0);
}

const text = (max: number) => z.string().trim().max(max);
const tools = z
  .string()
  .transform(toolList)
  .pipe(z.array(z.string().regex(/^[A-Za-z_][\w.-]*(\(.*\))?$/, 'a tool name, optionally Name(pattern)')));

/** A slash command's frontmatter (Claude Code's fields; Copilot's `tools` is read as `allowed-tools`). */
export const commandFrontmatter = z.object({
  description: text(1024).optional(),
  'allowed-tools': tools.optional(),
  tools: tools.optional(),
  model: text(200).optional(),
  'argument-hint': text(200).optional(),
});

/** A custom agent's frontmatter (Claude Code's and Copilot's agent files). */
export const agentFrontmatter = z.object({
  name: z
    .string()
    .trim()
    .regex(/^[a-z0-9][a-z0-9_-]{0,63}$/i, 'letters, digits, - and _ (at most 64)')
    .optional(),
  description: text(1024).optional(),
  tools: tools.optional(),
  model: text(200).optional(),
});

export function zodProblem(error: z.ZodError): string {
  return error.issues.map((i) => `${i.path.join('.') || 'frontmatter'}: ${i.message}`).join('; ');
}

/** One Markdown file found: `rel` under its folder, `real` the canonical path to read (undefined: refused). */
export interface FoundFile {
  readonly rel: string;
  /** Undefined when the file is a link that resolves outside `confineTo`: it is never read. */
  readonly real: string | undefined;
}

function realOrUndefined(p: string): string | undefined {
  try {
    return fs.realpathSync(p);
  } catch {
    return undefined;
  }
}

function isInside(parent: string, child: string): boolean {
  const rel = path.relative(parent, child);
  return rel === '' || (rel !== '..' && !rel.startsWith(`..${path.sep}`) && !path.isAbsolute(rel));
}

/**
 * Markdown files under `dir` (recursively when asked), sorted, dotfiles skipped. Links are followed,
 * but with `confineTo` (a workspace's files) only while they stay inside it: a cloned repository can
 * ship `.claude/commands/x.md -> ~/.aws/credentials`, and `/x` would send that file to the model.
 * The user's own folders (no `confineTo`) may link anywhere they like.
 */
export function markdownFiles(
  dir: string,
  suffix: string,
  recursive: boolean,
  confineTo?: string,
): FoundFile[] {
  const out: FoundFile[] = [];
  const fence = confineTo === undefined ? undefined : (realOrUndefined(confineTo) ?? path.resolve(confineTo));
  const walk = (rel: string, depth: number) => {
    let entries: fs.Dirent[];
    try {
      entries = fs.readdirSync(path.join(dir, rel), { withFileTypes: true });
    } catch {
      return;
    }
    for (const entry of entries.sort((a, b) => (a.name < b.name ? -1 : 1))) {
      if (entry.name.startsWith('.')) continue;
      const child = rel ? `${rel}/${entry.name}` : entry.name;
      let stat: fs.Stats;
      try {
        stat = fs.statSync(path.join(dir, child));
      } catch {
        continue;
      }
      // Depth-limited: a symlink loop in a commands folder must not hang discovery.
      if (stat.isDirectory() && recursive && depth < 4) walk(child, depth + 1);
      else if (stat.isFile() && entry.name.endsWith(suffix) && stat.size <= 256 * 1024) {
        const real = realOrUndefined(path.join(dir, child));
        out.push({ rel: child, real: real && (!fence || isInside(fence, real)) ? real : undefined });
      }
    }
  };
  walk('', 0);
  return out;
}

/** The problem shown for a workspace file that links outside the workspace. */
export const LINKS_OUTSIDE = 'links to a file outside the workspace; it is not read';

export function readFileText(file: string): string | undefined {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
}

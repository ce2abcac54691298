import { z } from 'zod';
import { lazy } from '../lazy.ts';

// The frontmatter of Cursor rules (`.mdc`: description, globs, alwaysApply) and Copilot instruction
// files (`applyTo`). Both tools write it loosely — `globs: *.ts, *.tsx` unquoted, a flow list
// `["a", "b"]`, or a block list of `- a` lines — so this reads those three shapes for the few keys
// that matter and validates the result with zod; the skills reader (strict YAML subset) would reject
// the common unquoted `*.ts`. Anything else in the block is ignored: it cannot grant anything.

export interface RuleFrontmatter {
  readonly description?: string;
  readonly globs: readonly string[];
  readonly alwaysApply: boolean;
  /** Whether a `globs`/`applyTo` key was present at all (absent ≠ empty for Copilot files). */
  readonly hasGlobs: boolean;
}

const stringOrList = z.union([z.string(), z.array(z.string())]);
const schema = lazy(() =>
  z.object({
    description: z.string().optional(),
    globs: stringOrList.optional(),
    applyTo: stringOrList.optional(),
    alwaysApply: z.union([z.boolean(), z.enum(['true', 'false', 'True', 'False', 'yes', 'no'])]).optional(),
  }),
);

const MAX_GLOBS = 50;

function unquote(value: string): string {
  const v = value.trim();
  if (v.length >= 2 && ((v.startsWith('"') && v.endsWith('"')) || (v.startsWith("'") && v.endsWith("'")))) {
    return v.slice(1, -1);
  }
  return v;
}

function scalarOrFlow(value: string): string | string[] {
  const v = value.trim();
  if (v.startsWith('[') && v.endsWith(']')) {
    return v
      .slice(1, -1)
      .split(',')
      .map(unquote)
      .filter((s) => s.length > 0);
  }
  return unquote(v);
}

function globList(value: string | readonly string[] | undefined): string[] {
  if (value === undefined) return [];
  const items = typeof value === 'string' ? value.split(',') : value.flatMap((v) => v.split(','));
  return items
    .map((g) => unquote(g))
    .filter((g) => g.length > 0)
    .slice(0, MAX_GLOBS);
}

/** Splits `---` frontmatter from the body; files without one are all body. */
export function splitRuleFrontmatter(text: string): { frontmatter: RuleFrontmatter; body: string } {
  const normalized = text.replace(/^\uFEFF/, '').replace(/\r\n/g, '\n');
  const empty: RuleFrontmatter = { globs: [], alwaysApply: false, hasGlobs: false };
  if (!normalized.startsWith('---\n')) return { frontmatter: empty, body: normalized };
  const end = normalized.indexOf('\n---', 3);
  if (end < 0) return { frontmatter: empty, body: normalized };
  const afterEnd = normalized.indexOf('\n', end + 4);
  const body = afterEnd < 0 ? '' : normalized.slice(afterEnd + 1);
  const raw: Record<string, string | string[]> = {};
  let listKey: string | undefined;
  for (const line of normalized.slice(4, end).split('\n')) {
    const item = /^\s+-\s+(.*)$/.exec(line);
    if (item && listKey) {
      const list = raw[listKey];
      raw[listKey] = [...(Array.isArray(list) ? list : []), unquote(item[1]!)];
      continue;
    }
    const kv = /^([A-Za-z][A-Za-z0-9_-]*):(?:\s+(.*))?$/.exec(line);
    if (!kv) continue;
    const value = (kv[2] ?? '').trim();
    listKey = value === '' ? kv[1]! : undefined;
    if (value !== '') raw[kv[1]!] = scalarOrFlow(value);
  }
  const parsed = schema().safeParse(raw);
  // A malformed block is read as no frontmatter: the rule then applies on request, never more widely.
  if (!parsed.success) return { frontmatter: empty, body };
  const data = parsed.data;
  const always = data.alwaysApply;
  const description = data.description?.replace(/\s+/g, ' ').trim();
  return {
    frontmatter: {
      ...(description ? { description } : {}),
      globs: globList(data.globs ?? data.applyTo),
      alwaysApply: always === true || (typeof always === 'string' && /^(true|yes)$/i.test(always)),
      hasGlobs: data.globs !== undefined || data.applyTo !== undefined,
    },
    body,
  };
}

/** `**`, `**\/*` and friends: a glob every file matches is an always-on rule, not a scoped one. */
export function matchesEverything(globs: readonly string[]): boolean {
  return globs.some((g) => /^(\*\*\/?)?\*{1,2}(\.\*)?$/.test(g.trim()) || g.trim() === '**/*');
}

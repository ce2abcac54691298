import * as fs from 'node:fs';
import * as path from 'node:path';
import { z } from 'zod';
import { lazy } from '../lazy.ts';
import type { SkillEntry, SkillIndex } from '../skills/discover.ts';
import { readSkillNow, skillReminder } from '../skills/discover.ts';
import { climbsOut } from '../safety/paths/pathReadings.ts';
import type { ToolContext, ToolDefinition, ToolResult } from './protocol.ts';
import { fail, ok } from './protocol.ts';

// Skill {name}: the guide comes back as a TOOL RESULT (P3), never into the system prompt (P1). The index
// is the session's snapshot; the body is re-read from disk when asked for. Asking again for a skill
// already loaded in this session returns its short reminder while the full text is still in context
// (`inContext`, from the context engine); once pruning or a compaction has removed it, the full body
// comes back. `full` forces the body. One instance per session: the "already loaded" set is per session.

export const SKILL_MAX_FILE_BYTES = 50 * 1024;

const inputSchema = lazy(() =>
  z.object({
    name: z.string().min(1).describe('Skill name'),
    file: z.string().optional().describe('A file the skill lists'),
    full: z.boolean().optional().describe('Reload the whole guide'),
  }),
);
export type SkillInput = z.infer<ReturnType<typeof inputSchema>>;

export interface SkillData {
  readonly name: string;
  readonly mode: 'full' | 'reminder' | 'file';
  readonly source: SkillEntry['source'];
  readonly files: readonly string[];
}

const DESCRIPTION = `Load a guide from the # Skills list when its description matches the work ahead, before starting.
Example: {"name":"safe-refactoring"}`;

function realOrUndefined(p: string): string | undefined {
  try {
    return fs.realpathSync(p);
  } catch {
    return undefined;
  }
}

function within(parent: string, child: string): boolean {
  const rel = path.relative(parent, child);
  return rel === '' || (rel !== '..' && !rel.startsWith(`..${path.sep}`) && !path.isAbsolute(rel));
}

/**
 * A workspace skill is content from the repository: its folder and SKILL.md must really be inside the
 * workspace (a cloned repo can ship `.agents/skills/x -> ~/.ssh` or a SKILL.md that links out).
 * Bundled and user skills live outside by design and are trusted locations.
 */
function skillEscapes(entry: SkillEntry, ctx: ToolContext): boolean {
  if (entry.source !== 'workspace') return false;
  const dir = realOrUndefined(entry.dir);
  const file = realOrUndefined(entry.file);
  return !dir || !file || !ctx.guard.contains(dir) || !ctx.guard.contains(file) || !within(dir, file);
}

function outsideSkill(what: string): ToolResult<SkillData> {
  return fail(
    'OUTSIDE_WORKSPACE',
    `${what} is outside the skill's folder or the workspace.`,
    'Load a skill by its name from the # Skills list, and its files by the names the skill lists.',
  ) as ToolResult<SkillData>;
}

/** Read a supporting file only if it really is a regular file inside the skill's real folder. */
function readSupportingFile(
  entry: SkillEntry,
  match: string,
): { text: string } | { size: number } | 'outside' {
  const dir = realOrUndefined(entry.dir);
  const real = realOrUndefined(path.join(entry.dir, match));
  if (!dir || !real || !within(dir, real) || real === dir) return 'outside';
  // O_NOFOLLOW + O_NONBLOCK: a link or FIFO swapped in after the check neither leads out nor blocks.
  const fd = fs.openSync(real, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK);
  try {
    const stat = fs.fstatSync(fd);
    if (!stat.isFile()) return 'outside';
    if (stat.size > SKILL_MAX_FILE_BYTES) return { size: stat.size };
    return { text: fs.readFileSync(fd, 'utf8') };
  } finally {
    fs.closeSync(fd);
  }
}

function displayFile(entry: SkillEntry, file: string, ctx: ToolContext): string {
  const absolute = path.join(entry.dir, file);
  return entry.source === 'workspace' && ctx.guard.contains(absolute) ? ctx.guard.display(absolute) : file;
}

function filesBlock(entry: SkillEntry, ctx: ToolContext): string {
  if (entry.files.length === 0) return '';
  const readable = entry.source === 'workspace';
  const list = entry.files.map((f) => `- ${displayFile(entry, f, ctx)}`).join('\n');
  const how = readable
    ? 'read them with Read when needed'
    : `read them with Skill {"name":"${entry.name}","file":"<file>"} when needed`;
  return `\n\nSupporting files (${how}):\n${list}`;
}

export interface SkillToolOptions {
  /**
   * Whether the full guide of a skill is still in the model's context (unpruned). Absent: a skill
   * loaded earlier in this session is assumed still visible.
   */
  readonly inContext?: (name: string) => boolean;
}

export function createSkillTool(
  index: SkillIndex,
  options: SkillToolOptions = {},
): ToolDefinition<SkillInput, SkillData> {
  const byName = new Map(index.skills.map((s) => [s.name, s]));
  const loaded = new Set<string>();

  const unknown = (name: string, ctx: ToolContext): ToolResult<SkillData> => {
    if (climbsOut(name) || name.includes('\0')) return outsideSkill(`Skill ${JSON.stringify(name)}`);
    const problem = index.problems.find(
      (p) => p.level === 'error' && path.basename(path.dirname(p.path)) === name,
    );
    if (problem && problem.source === 'workspace') {
      // The problem text quotes the file; a folder that links out must not have it quoted.
      const dir = realOrUndefined(path.dirname(problem.path));
      if (!dir || !ctx.guard.contains(dir)) return outsideSkill(`Skill "${name}"`);
    }
    if (problem) {
      return fail(
        'INVALID_PARAM',
        `Skill "${name}" exists but is invalid: ${problem.message} (${problem.path}).`,
        'Tell the user the skill needs fixing, and continue without it.',
      ) as ToolResult<SkillData>;
    }
    const names = [...byName.keys()];
    return fail(
      'NOT_FOUND',
      `There is no skill named "${name}".`,
      names.length > 0
        ? `Available skills: ${names.join(', ')}.`
        : 'No skills are installed; continue without one.',
    ) as ToolResult<SkillData>;
  };

  return {
    name: 'Skill',
    description: DESCRIPTION,
    get inputSchema() {
      return inputSchema();
    },
    readOnly: true,
    async execute(input, ctx) {
      const snapshot = byName.get(input.name);
      if (!snapshot) return unknown(input.name, ctx);
      if (skillEscapes(snapshot, ctx)) return outsideSkill(`Skill "${snapshot.name}"`);
      const { entry, note } = readSkillNow(snapshot);
      if (skillEscapes(entry, ctx)) return outsideSkill(`Skill "${entry.name}"`);
      const prefix = note ? `${note}\n\n` : '';
      const data = (mode: SkillData['mode']): SkillData => ({
        name: entry.name,
        mode,
        source: entry.source,
        files: entry.files,
      });

      if (input.file !== undefined) {
        if (climbsOut(input.file) || input.file.includes('\0')) {
          return outsideSkill(`File ${JSON.stringify(input.file)}`);
        }
        const wanted = input.file.replace(/^\.\//, '');
        const match = entry.files.find((f) => f === wanted || displayFile(entry, f, ctx) === input.file);
        if (!match) {
          return fail(
            'NOT_FOUND',
            `Skill "${entry.name}" has no supporting file "${input.file}".`,
            entry.files.length > 0
              ? `Its files: ${entry.files.join(', ')}.`
              : 'This skill has no supporting files.',
          ) as ToolResult<SkillData>;
        }
        let read: ReturnType<typeof readSupportingFile>;
        try {
          read = readSupportingFile(entry, match);
        } catch {
          read = 'outside';
        }
        if (read === 'outside') return outsideSkill(`File ${JSON.stringify(match)}`);
        if ('size' in read) {
          return fail(
            'TOO_LARGE',
            `${match} is ${read.size} bytes; Skill returns files up to ${SKILL_MAX_FILE_BYTES} bytes.`,
            'Ask the user for the part you need.',
          ) as ToolResult<SkillData>;
        }
        return ok(
          data('file'),
          `${prefix}<skill-file skill="${entry.name}" path="${match}">\n${read.text}\n</skill-file>`,
        );
      }

      const visible = options.inContext?.(entry.name) ?? true;
      if (loaded.has(entry.name) && !input.full && visible) {
        return ok(
          data('reminder'),
          `${prefix}Skill "${entry.name}" was loaded earlier in this session. Key points:\n${skillReminder(entry.body)}\n(If the full guide is no longer in your context, call Skill with "full": true.)`,
        );
      }
      loaded.add(entry.name);
      return ok(
        data('full'),
        `${prefix}<skill name="${entry.name}">\n${entry.body}\n</skill>${filesBlock(entry, ctx)}`,
      );
    },
  };
}

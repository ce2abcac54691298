import { z } from 'zod';
import { lazy } from '../lazy.ts';
import type { ApprovalMessage } from '../approvalMessage.ts';
import type { AgentMessage } from '../messages.ts';
import {
  addEntry,
  cleanEntryText,
  dateOf,
  EntryError,
  fileHash,
  hasEntry,
  removeEntry,
  replaceEntry,
} from '../memory/document.ts';
import { copiedFromToolResult } from '../memory/provenance.ts';
import { refusal } from '../safety/approvals.ts';
import {
  type MemoryChange,
  MemoryError,
  type MemoryPaths,
  readMemoryFile,
  writeMemory,
} from '../memory/store.ts';
import { failure, inStateDir, runTool } from './fs/common.ts';
import { ok, type ToolContext, type ToolDefinition } from './protocol.ts';

// Memory (semantic memory): curates MEMORY.md — short dated bullets under headings. A change is on disk
// at once (previous version saved to history first) and shows in the system prompt from the next
// session on; the running session's prefix never changes (P1).

const inputSchema = lazy(() =>
  z.object({
    action: z.enum(['add', 'replace', 'remove']),
    text: z.string().optional(),
    old: z.string().optional().describe('Entry to replace/remove'),
    heading: z.string().optional(),
    user: z.boolean().optional(),
  }),
);
export type MemoryInput = z.infer<ReturnType<typeof inputSchema>>;

export interface MemoryData {
  readonly change?: { readonly id: string; readonly file: string };
}

const DESCRIPTION = `Keep a fact for later sessions (MEMORY.md): user preferences, conventions, decisions + why. Not for task state.
{"action":"add","text":"Use pnpm"}`;

export interface MemoryToolOptions {
  readonly paths: MemoryPaths;
  readonly transcript: () => readonly AgentMessage[];
  readonly onChange: (change: MemoryChange) => void;
}

const MAX_CITED = 3;

/** Workspace files the fact names (`src/db.ts`, `package.json`), with their content hash. */
async function citedFiles(fact: string, ctx: ToolContext): Promise<Array<{ display: string; hash: string }>> {
  const out: Array<{ display: string; hash: string }> = [];
  const seen = new Set<string>();
  for (const m of fact.matchAll(/[\w@./-]*\w\.[A-Za-z0-9]{1,8}\b/g)) {
    if (out.length >= MAX_CITED) break;
    const r = ctx.guard.resolve(m[0]);
    if (!r.ok || seen.has(r.path) || inStateDir(ctx, r.path)) continue;
    const st = await ctx.host.workspace.stat(r.path);
    if (st?.type !== 'file') continue;
    seen.add(r.path);
    out.push({ display: r.display, hash: fileHash(await ctx.host.workspace.readFile(r.path, ctx.signal)) });
  }
  return out;
}

/** Asks once, never remembered for the session; a denial ends the call. */
async function askToSave(
  ctx: ToolContext,
  title: string,
  detail: string,
  message: ApprovalMessage,
): Promise<void> {
  const decision = await ctx.host.approvals.ask(
    { kind: 'other', title, detail, risk: 'medium', once: true, message },
    ctx.signal,
  );
  if (decision === 'deny')
    failure(
      'DENIED_BY_USER',
      ctx.host.approvals.unattended
        ? `Not saved. ${refusal(ctx.host.approvals, 'this memory change')}`
        : 'Not saved: the user did not approve this memory change.',
      'Do not retry; if the fact matters, tell the user and let them save it.',
    );
}

export function createMemoryTool(options: MemoryToolOptions): ToolDefinition<MemoryInput, MemoryData> {
  return {
    name: 'Memory',
    description: DESCRIPTION,
    get inputSchema() {
      return inputSchema();
    },
    readOnly: false,
    execute: (input, ctx) =>
      runTool(ctx, async () => {
        const scope = input.user ? 'user' : 'workspace';
        const file = scope === 'user' ? options.paths.user : options.paths.workspace;
        if (!file) failure('UNAVAILABLE', 'User memory is not available here.', 'Save it without "user".');
        const needs = (field: 'text' | 'old') => {
          const value = input[field]?.trim();
          if (!value)
            failure('INVALID_PARAM', `"${field}" is required for ${input.action}.`, 'Add it and retry.');
          return value;
        };
        let bullet = '';
        if (input.action !== 'remove') {
          let fact: string;
          try {
            fact = cleanEntryText(needs('text'));
          } catch (error) {
            return failure('INVALID_PARAM', (error as Error).message, 'Write one short line.');
          }
          bullet = `${dateOf(ctx.host.clock.now())}: ${fact}`;
          // A fact about a file cites it with its hash, so the snapshot can mark it stale once it changes.
          for (const ref of await citedFiles(fact, ctx)) bullet += ` [${ref.display}@${ref.hash}]`;
          const copied = copiedFromToolResult(input.text ?? '', options.transcript());
          if (copied && scope === 'workspace')
            await askToSave(
              ctx,
              'Save tool output to memory',
              `The agent wants to save text that came from a tool result (file, command or web) to this workspace's memory (.keel/memory/MEMORY.md):\n${bullet}`,
              { id: 'memory_tool_output', entry: bullet },
            );
        }
        // User memory reaches every project's prompt: each change to it is the user's decision,
        // whatever the model says the user asked for (a file it read can say that too).
        if (scope === 'user')
          await askToSave(
            ctx,
            input.action === 'remove'
              ? 'Remove from your memory (all projects)'
              : 'Save to your memory (all projects)',
            `The agent wants to ${input.action} an entry ${input.action === 'add' ? 'in' : 'of'} ~/.keel/MEMORY.md, which is in the system prompt of every session in every workspace:\n${input.action === 'remove' ? (input.old ?? '') : bullet}${input.action === 'replace' ? `\n(replacing: ${input.old ?? ''})` : ''}`,
            {
              id: 'memory_user',
              action: input.action,
              entry: input.action === 'remove' ? (input.old ?? '') : bullet,
              ...(input.action === 'replace' ? { replaced: input.old ?? '' } : {}),
            },
          );
        const before = readMemoryFile(file);
        let next: string;
        try {
          if (input.action === 'add') {
            if (before && hasEntry(before, bullet.replace(/^\d{4}-\d{2}-\d{2}:\s*/, '')))
              return ok({}, `Already in memory: ${bullet}`);
            next = addEntry(before, input.heading, bullet);
          } else if (!before) {
            return failure('NOT_FOUND', 'The memory file is empty.', 'Use action "add".');
          } else if (input.action === 'replace') next = replaceEntry(before, needs('old'), bullet);
          else next = removeEntry(before, needs('old'));
        } catch (error) {
          if (error instanceof EntryError)
            failure(error.code, error.message, 'Copy a unique part of the entry from MEMORY.md.');
          throw error;
        }
        let change: MemoryChange | undefined;
        try {
          change = writeMemory(options.paths, scope, next, {
            origin: 'agent',
            summary: `${input.action}: ${input.action === 'remove' ? input.old : bullet}`,
            now: ctx.host.clock.now(),
          });
        } catch (error) {
          if (error instanceof MemoryError)
            failure('ACCESS_DENIED', error.message, 'Tell the user; do not work around it.');
          throw error;
        }
        if (change) {
          ctx.audit({
            type: 'file_change',
            path: change.file,
            action: `memory ${input.action}`,
            change: change.id,
          });
          options.onChange(change);
        }
        const shown = scope === 'user' ? '~/.keel/MEMORY.md' : '.keel/memory/MEMORY.md';
        return ok(
          change ? { change: { id: change.id, file: shown } } : {},
          `${input.action === 'remove' ? 'Removed from' : 'Saved to'} ${shown} (in the system prompt from the next session on).`,
        );
      }),
  };
}

import * as fs from 'node:fs';
import type { AgentEventBody } from '../events.ts';
import type { AgentMessage } from '../messages.ts';
import type { PathGuard } from '../safety/paths/pathGuard.ts';
import { consolidate, hasDurableCue } from './consolidate.ts';
import { fileHash } from './document.ts';
import { workspaceMemoryTrusted } from '../trust/memoryTrust.ts';
import { renderMemorySnapshot } from './snapshot.ts';
import { type MemoryPaths, readMemoryFile } from './store.ts';

/**
 * The rendered snapshot of both memory files for a new session's system prompt (undefined: none).
 * The workspace file counts only in a version Keel wrote or the user approved (trust/memoryTrust.ts).
 */
export function takeMemorySnapshot(
  paths: MemoryPaths,
  guard: PathGuard,
  /** VS Code's workspace trust: in an untrusted workspace only Keel's own version counts. */
  workspaceTrusted = true,
): string | undefined {
  try {
    const workspace = readMemoryFile(paths.workspace);
    return renderMemorySnapshot(
      [
        { label: 'User (~/.keel/MEMORY.md)', text: paths.user ? readMemoryFile(paths.user) : undefined },
        {
          label: 'Workspace (.keel/memory/MEMORY.md)',
          text:
            workspace !== undefined &&
            workspaceMemoryTrusted(paths.stateDir, workspace, process.env, workspaceTrusted)
              ? workspace
              : undefined,
        },
      ],
      {
        hashOf: (rel) => {
          const r = guard.resolve(rel);
          if (!r.ok) return undefined;
          try {
            return fileHash(fs.readFileSync(r.path));
          } catch {
            return undefined;
          }
        },
      },
    );
  } catch {
    return undefined; // an unreadable memory file never blocks a session
  }
}

export const CONSOLIDATION_TIMEOUT_MS = 60_000;

/**
 * Real work since the last consolidation: a compaction happened, or tools ran and the user said
 * something durable — unless the agent already saved memory itself in that stretch.
 */
export function consolidationDue(fresh: readonly AgentMessage[]): boolean {
  const savedByAgent = fresh.some(
    (m) => m.role === 'tool_result' && m.toolName === 'Memory' && m.result.status === 'success',
  );
  if (savedByAgent) return false;
  if (fresh.some((m) => m.role === 'summary')) return true;
  return fresh.some((m) => m.role === 'tool_result') && hasDurableCue(fresh);
}

export async function runConsolidation(args: {
  readonly messages: readonly AgentMessage[];
  readonly paths: MemoryPaths;
  readonly now: () => number;
  readonly emit: (body: AgentEventBody) => unknown;
  readonly ask: (prompt: string, signal: AbortSignal) => Promise<string>;
}): Promise<void> {
  const controller = new AbortController();
  const timer = setTimeout(
    () => controller.abort('memory consolidation timed out'),
    CONSOLIDATION_TIMEOUT_MS,
  );
  try {
    const change = await consolidate({
      messages: args.messages,
      paths: args.paths,
      now: args.now(),
      ask: (prompt) => args.ask(prompt, controller.signal),
    });
    if (change) args.emit({ type: 'memory_changed', change });
  } catch (error) {
    args.emit({
      type: 'notice',
      level: 'warn',
      text: `Memory consolidation failed (nothing lost: the conversation stays in the session log): ${error instanceof Error ? error.message : String(error)}`,
    });
  } finally {
    clearTimeout(timer);
  }
}

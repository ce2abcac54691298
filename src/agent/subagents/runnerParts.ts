import * as path from 'node:path';
import type { AgentMessage } from '../messages.ts';
import { toolUses } from '../messages.ts';
import { fail } from '../tools/protocol.ts';
import type { ToolRegistry } from '../tools/registry.ts';

// What the runner (runner.ts) needs around a sub-agent's loop: the depth limit on its registry, the
// files it really read and changed (from its own successful calls), and the cap on its answer.

const READ_TOOLS = new Set(['Read', 'Grep', 'Glob', 'LS']);
const WRITE_TOOLS = new Set(['Edit', 'MultiEdit', 'Write']);

export function depthLimited(registry: ToolRegistry): ToolRegistry {
  return {
    ...registry,
    execute(name, input, context) {
      if (name === 'Task') {
        const result = fail(
          'BLOCKED_BY_POLICY',
          'A sub-agent cannot start sub-agents (depth limit 1).',
          'Do the work with your own tools, or say in your answer what is left.',
        );
        return Promise.resolve({ result, content: `Error [BLOCKED_BY_POLICY]: ${result.text}` });
      }
      return registry.execute(name, input, context);
    },
  };
}

/** Paths the sub-agent looked at and changed, from its own successful calls (not from its claims). */
export function filesTouched(transcript: readonly AgentMessage[], root: string) {
  const ok = new Set(
    transcript.flatMap((m) => (m.role === 'tool_result' && m.result.status !== 'error' ? [m.toolUseId] : [])),
  );
  const read = new Set<string>();
  const changed = new Set<string>();
  for (const m of transcript) {
    if (m.role !== 'assistant') continue;
    for (const use of toolUses(m)) {
      if (!ok.has(use.id)) continue;
      const p = typeof use.input.path === 'string' ? use.input.path : undefined;
      const shown = p ? path.relative(root, path.resolve(root, p)) || '.' : undefined;
      if (READ_TOOLS.has(use.name)) read.add(shown ?? '.');
      if (WRITE_TOOLS.has(use.name) && shown) changed.add(shown);
    }
  }
  return { read: [...read].sort(), changed: [...changed].sort() };
}

export function cap(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}\n[… cut: the sub-agent's answer was longer]`;
}

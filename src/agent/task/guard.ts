import type { AnyToolDefinition, ToolContext, ToolDefinition, ToolResult } from '../tools/protocol.ts';
import { fail } from '../tools/protocol.ts';
import { FEATURE_LIST, TASK_DIR } from './featureList.ts';

// In a long-task session the feature list changes only through FeatureDone. Every other way the
// agent's tools could change it is refused here, by code: Write/Edit/MultiEdit naming the file, and
// any command that names the file or the task folder as a whole (sed -i, >, mv, rm, git checkout…).
// What slips past (a script that finds the file itself) is caught and reverted at the session's end.

const PATH_TOOLS = new Set(['Write', 'Edit', 'MultiEdit']);
// Commands may run keel-task/init.sh and touch progress.md; anything else under keel-task/ is refused.
const TASK_REFERENCE = new RegExp(`feature_list|${TASK_DIR}(?!/(?:progress\\.md|init\\.sh)(?![\\w.*?\\[-]))`);

function blocked(what: string): ToolResult {
  return fail(
    'BLOCKED_BY_POLICY',
    `${what}: ${FEATURE_LIST} is the task's contract; in a long task it changes only through FeatureDone.`,
    'Do not edit the feature list. To mark a feature as passing, call FeatureDone {"id"}; it runs the feature\'s verify command and flips `passes` when it exits 0.',
  );
}

export function commandTouchesTaskFiles(command: string): boolean {
  return TASK_REFERENCE.test(command);
}

export function protectFeatureList(
  tool: AnyToolDefinition,
  protectedCanonical: readonly string[],
): AnyToolDefinition {
  if (!PATH_TOOLS.has(tool.name) && tool.name !== 'Bash') return tool;
  const inner = tool as unknown as ToolDefinition<Record<string, unknown>, unknown>;
  const guarded: ToolDefinition<Record<string, unknown>, unknown> = {
    ...inner,
    async execute(input, ctx: ToolContext) {
      if (tool.name === 'Bash') {
        const command = String(input.command ?? '');
        if (commandTouchesTaskFiles(command)) {
          ctx.audit({
            type: 'policy_block',
            tool: 'Bash',
            command,
            reason: 'long task: feature list is protected',
          });
          return blocked('Refused command');
        }
      } else {
        const resolved = ctx.guard.resolve(String(input.path ?? ''));
        if (resolved.ok && protectedCanonical.includes(resolved.path)) {
          ctx.audit({ type: 'policy_block', tool: tool.name, path: FEATURE_LIST, reason: 'long task' });
          return blocked(`Refused ${tool.name}`);
        }
      }
      return inner.execute(input, ctx);
    },
  };
  return guarded as unknown as AnyToolDefinition;
}

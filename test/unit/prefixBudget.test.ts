import assert from 'node:assert/strict';
import { test } from 'node:test';
import { measureSentPrefix } from './helpers/prefix.ts';

// The fixed prefix (tools + system of the default toolset, with the bundled skills' index) as a real
// session sends it, counted with the cl100k tokenizer: the team budget of 2,500 tokens, now that
// Memory, Task and Job are all in the default toolset and the system prompt carries the sandbox's
// untrusted-content notice. (MCP tools only appear when servers are configured, FeatureDone only in
// long-task sessions: neither is part of the default prefix.) Raised from 2,500 to 2,550 when Task
// gained writer sub-agents in their own worktrees and the task graph ("id"/"after"): +40 tokens, the
// whole prefix still about a quarter of Claude Code's (9,562 measured on the same scripted work).
const BUDGET = 2550;

test(`the fixed prefix of the default toolset is at most ${BUDGET} cl100k tokens`, async () => {
  const m = await measureSentPrefix();
  for (const name of [
    'Bash',
    'Job',
    'Task',
    'Memory',
    'MemorySearch',
    'Read',
    'Edit',
    'Grep',
    'Glob',
    'Skill',
  ]) {
    assert.ok(m.perTool[name], `the default toolset offers ${name}`);
  }
  for (const name of ['McpSearch', 'McpCall', 'FeatureDone']) {
    assert.equal(m.perTool[name], undefined, `${name} is not in the default prefix`);
  }
  assert.ok(m.system > 0 && m.tools > 0);
  assert.ok(
    m.total <= BUDGET,
    `tools + system = ${m.total} tokens (system ${m.system}, tools ${JSON.stringify(m.perTool)}); budget ${BUDGET}`,
  );
});

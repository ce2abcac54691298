import assert from 'node:assert/strict';
import { test } from 'node:test';
import { measureSentPrefix } from './helpers/prefix.ts';

// The fixed prefix (tools + system of the default toolset, with the bundled skills' index) as a real
// session sends it, counted with the cl100k tokenizer. The team budget is 2,500 after every branch
// lands. The Memory tool (≤110) has landed with i9-memory, so this is the team budget itself.
const BRANCH_BUDGET = 2500;

test(`the fixed prefix of the default toolset is at most ${BRANCH_BUDGET} cl100k tokens`, async () => {
  const m = await measureSentPrefix();
  for (const name of ['Bash', 'Job', 'Read', 'Edit', 'Grep', 'Glob', 'Skill', 'TodoWrite']) {
    assert.ok(m.perTool[name], `the default toolset offers ${name}`);
  }
  assert.ok(m.system > 0 && m.tools > 0);
  assert.ok(
    m.total <= BRANCH_BUDGET,
    `tools + system = ${m.total} tokens (system ${m.system}, tools ${JSON.stringify(m.perTool)}); budget ${BRANCH_BUDGET}`,
  );
});

import { measureSentPrefix } from '../test/unit/helpers/prefix.ts';

// Fixed-prefix budget (cl100k tokens of tools + system as sent, default toolset, bundled skills'
// index), per tool, against the 2,500-token budget the whole team shares.
export const PREFIX_BUDGET_TOKENS = 2500;

export async function runPrefixBench() {
  const m = await measureSentPrefix();
  return {
    total_tokens: m.total,
    budget_tokens: PREFIX_BUDGET_TOKENS,
    ratio_to_budget: Number((m.total / PREFIX_BUDGET_TOKENS).toFixed(3)),
    system_tokens: m.system,
    tools_tokens: m.tools,
    per_tool: m.perTool,
  };
}

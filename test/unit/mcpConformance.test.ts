import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
// @ts-expect-error: a plain .mjs script without types
import { findSuite, runScenario } from '../../scripts/mcp-conformance.mjs';

// The official MCP conformance suite's client scenarios, driven through the built `keel run
// --mcp-config` with a scripted model (scripts/mcp-conformance.mjs prints all of them). The scenarios
// that pass are asserted here, so a regression fails; the rest are printed, not asserted.

/** Scenarios Keel passes today (baseline before OAuth/elicitation work: the first four). */
const PASSING = ['initialize', 'tools_call', 'sse-retry', 'auth/resource-mismatch'];

interface Result {
  scenario: string;
  ok: boolean;
  passed: number;
  failed: number;
  detail: string;
}

const suite = findSuite() as string | undefined;

describe('MCP conformance (client scenarios)', {
  skip: suite ? false : 'the conformance suite is not installed',
}, () => {
  for (const scenario of PASSING) {
    test(scenario, { timeout: 90_000 }, async () => {
      const r = (await runScenario(suite, scenario)) as Result;
      assert.ok(r.ok, `${scenario}: ${r.detail}`);
    });
  }
});

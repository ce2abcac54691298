import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
// @ts-expect-error: a plain .mjs script without types
import { findSuite, runScenario } from '../../scripts/mcp-conformance.mjs';

// The official MCP conformance suite's client scenarios, driven through the built `keel run
// --mcp-config` with a scripted model (scripts/mcp-conformance.mjs prints all of them). Every client
// scenario of the suite's 0.1.16 is asserted here, so a regression fails.

/**
 * Scenarios Keel passes: all 26 (baseline before OAuth/elicitation/roots: initialize, tools_call,
 * sse-retry and auth/resource-mismatch — 4 of 26).
 */
const PASSING = [
  'initialize',
  'tools_call',
  'elicitation-sep1034-client-defaults',
  'sse-retry',
  'auth/metadata-default',
  'auth/metadata-var1',
  'auth/metadata-var2',
  'auth/metadata-var3',
  'auth/basic-cimd',
  'auth/scope-from-www-authenticate',
  'auth/scope-from-scopes-supported',
  'auth/scope-omitted-when-undefined',
  'auth/scope-step-up',
  'auth/scope-retry-limit',
  'auth/token-endpoint-auth-basic',
  'auth/token-endpoint-auth-post',
  'auth/token-endpoint-auth-none',
  'auth/pre-registration',
  'auth/2025-03-26-oauth-metadata-backcompat',
  'auth/2025-03-26-oauth-endpoint-fallback',
  'auth/resource-mismatch',
  'auth/offline-access-scope',
  'auth/offline-access-not-supported',
  'auth/client-credentials-jwt',
  'auth/client-credentials-basic',
  'auth/cross-app-access-complete-flow',
];

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

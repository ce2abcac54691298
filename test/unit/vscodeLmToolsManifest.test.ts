import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import { test } from 'node:test';
import { createGlobTool } from '../../src/agent/tools/glob.ts';
import { createGrepTool } from '../../src/agent/tools/grep.ts';
import { createLsTool } from '../../src/agent/tools/ls.ts';
import type { AnyToolDefinition } from '../../src/agent/tools/protocol.ts';
import { createReadTool } from '../../src/agent/tools/read.ts';
import { toApiTool } from '../../src/agent/tools/registry.ts';

// VS Code reads a language-model tool's schema and description from package.json, not from the code
// (src/extension/lm/keelTools.ts). They must be exactly what Keel's own model is given, or another
// agent would call a tool with inputs Keel then refuses.

interface ManifestTool {
  name: string;
  toolReferenceName: string;
  modelDescription: string;
  inputSchema: unknown;
  displayName: string;
  userDescription: string;
}

test("package.json declares Keel's read-only tools exactly as the core defines them", () => {
  const pkg = JSON.parse(fs.readFileSync('package.json', 'utf8')) as {
    contributes: { languageModelTools: ManifestTool[] };
  };
  const nls = JSON.parse(fs.readFileSync('package.nls.json', 'utf8')) as Record<string, string>;
  const declared = pkg.contributes.languageModelTools;
  const tools = [createReadTool(), createGrepTool(), createGlobTool(), createLsTool()] as AnyToolDefinition[];
  assert.deepEqual(
    declared.map((t) => t.name),
    tools.map((t) => `keel_${t.name.toLowerCase()}`),
  );
  for (const tool of tools) {
    const api = toApiTool(tool);
    const entry = declared.find((t) => t.name === `keel_${tool.name.toLowerCase()}`)!;
    assert.equal(entry.modelDescription, api.description, `${tool.name}: description`);
    assert.deepEqual(entry.inputSchema, JSON.parse(JSON.stringify(api.input_schema)), `${tool.name}: schema`);
    assert.equal(entry.toolReferenceName, `keel${tool.name}`);
    for (const key of [entry.displayName, entry.userDescription])
      assert.ok(nls[key.replace(/^%|%$/g, '')], `${key} has an English text`);
  }
});

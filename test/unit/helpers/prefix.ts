import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { getEncoding } from 'js-tiktoken';
import { createNodeHost } from '../../../src/agent/node/nodeHost.ts';
import { createPolicyApprovals } from '../../../src/agent/safety/approvals.ts';
import { createAgentSession } from '../../../src/agent/session/session.ts';
import { startEmulator } from '../../emulator/server.ts';

// The fixed prefix as the model receives it: one real session (default toolset, bundled skills, no
// AGENTS.md) sends one request to the emulator; its `tools` and `system` arrays, serialised as sent
// (cache markers aside: they are not prompt text), are counted with the cl100k tokenizer.

export interface PrefixTokens {
  readonly total: number;
  readonly system: number;
  readonly tools: number;
  readonly perTool: Readonly<Record<string, number>>;
}

const enc = getEncoding('cl100k_base');
export const cl100k = (text: string): number => enc.encode(text).length;

function withoutCacheControl<T>(value: T): T {
  return JSON.parse(JSON.stringify(value, (key, v) => (key === 'cache_control' ? undefined : v))) as T;
}

export async function measureSentPrefix(): Promise<PrefixTokens> {
  const workspace = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'keel-prefix-')));
  const emu = await startEmulator({});
  try {
    const session = createAgentSession({
      host: createNodeHost({ workspace, approvals: createPolicyApprovals('never') }),
      model: 'claude-sonnet-4-6',
      apiKey: 'test',
      baseURL: emu.url,
      bundledSkillsDir: path.resolve('skills'),
      userSkillsDir: null,
    });
    await session.prompt('hi');
    session.dispose();
    const body = emu.requests[0]?.body as { tools: { name: string }[]; system: unknown[] } | undefined;
    if (!body) throw new Error('the session sent no request');
    const tools = withoutCacheControl(body.tools);
    const system = withoutCacheControl(body.system);
    const perTool: Record<string, number> = {};
    for (const tool of tools) perTool[tool.name] = cl100k(JSON.stringify(tool));
    const toolsTokens = cl100k(JSON.stringify(tools));
    const systemTokens = cl100k(JSON.stringify(system));
    return { total: toolsTokens + systemTokens, system: systemTokens, tools: toolsTokens, perTool };
  } finally {
    await emu.close();
    fs.rmSync(workspace, { recursive: true, force: true });
  }
}

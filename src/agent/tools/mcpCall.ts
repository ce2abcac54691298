import { z } from 'zod';
import { lazy } from '../lazy.ts';
import type { McpPort } from '../host.ts';
import type { McpToolInfo } from '../mcp/connection.ts';
import type { McpManager } from '../mcp/manager.ts';
import { renderMcpResult } from '../mcp/render.ts';
import { refusal } from '../safety/approvals.ts';
import { canonicalJson } from '../safety/guards/loopDetector.ts';
import { wrapUntrusted } from '../safety/untrusted.ts';
import { limitOutput } from './output.ts';
import { fail, ok, partial, type ToolContext, ToolFailure, type ToolDefinition } from './protocol.ts';

// McpCall: runs one tool of a configured MCP server. Every call is a sensitive operation (a server can
// do anything) and asks first — unless the server marks the tool `readOnlyHint` and the user allows
// read-only MCP calls. Arguments are checked against the tool's own schema before anything runs.
// The result is data from outside: wrapped as untrusted, cut to the usual limits, spilled in full.

const inputSchema = lazy(() =>
  z.object({
    server: z.string().min(1).describe('Server name from the system prompt'),
    tool: z.string().min(1).describe('Tool name from McpSearch'),
    arguments: z.record(z.string(), z.unknown()).optional().describe('Must match the tool input_schema'),
  }),
);
export type McpCallInput = z.infer<ReturnType<typeof inputSchema>>;

export interface McpCallData {
  readonly server: string;
  readonly tool: string;
  readonly isError: boolean;
  readonly files: readonly string[];
}

const DESCRIPTION = `Call a tool of an MCP server. Find it and its input_schema with McpSearch first.
Example: {"server":"fs","tool":"read_file","arguments":{"path":"/tmp/a.txt"}}`;

async function approve(
  tool: McpToolInfo,
  input: McpCallInput,
  port: McpPort,
  ctx: ToolContext,
): Promise<void> {
  const what = `${input.server} › ${input.tool}`;
  if (tool.readOnlyHint && port.allowReadOnlyCalls()) {
    ctx.audit({
      type: 'approval_decision',
      tool: 'McpCall',
      kind: 'mcp',
      detail: what,
      decision: 'allow_read_only',
    });
    return;
  }
  const args = canonicalJson(input.arguments ?? {});
  const detail = `${what}${tool.readOnlyHint ? ' (the server marks it read-only)' : ''}\narguments: ${args}`;
  ctx.audit({
    type: 'approval_request',
    tool: 'McpCall',
    kind: 'mcp',
    title: `Call MCP tool ${what}`,
    detail,
    risk: 'medium',
  });
  const decision = await ctx.host.approvals.ask(
    {
      kind: 'mcp',
      title: `Call MCP tool ${what}`,
      detail,
      risk: 'medium',
      sessionKey: `mcp:${input.server}`,
      message: { id: 'mcp_call', tool: what, readOnlyHint: tool.readOnlyHint === true, arguments: args },
    },
    ctx.signal,
  );
  ctx.audit({ type: 'approval_decision', tool: 'McpCall', kind: 'mcp', detail: what, decision });
  if (ctx.signal.aborted)
    throw new ToolFailure('ABORTED', 'Aborted before the call ran.', 'Wait for the user.');
  if (decision === 'deny') {
    throw new ToolFailure(
      'DENIED_BY_USER',
      refusal(ctx.host.approvals, `calling ${what}`),
      'Do not retry this call; ask the user how to proceed.',
    );
  }
}

export function createMcpCallTool(
  manager: McpManager,
  port: McpPort,
): ToolDefinition<McpCallInput, McpCallData> {
  return {
    name: 'McpCall',
    description: DESCRIPTION,
    get inputSchema() {
      return inputSchema();
    },
    readOnly: false,
    circuitKey: (input) => `McpCall:${(input as Partial<McpCallInput>).server ?? ''}`,
    async execute(input, ctx) {
      const what = `${input.server} › ${input.tool}`;
      const started = Date.now();
      const audit = (status: string, extra: Record<string, unknown> = {}) =>
        ctx.audit({
          type: 'mcp_call',
          server: input.server,
          mcp_tool: input.tool,
          status,
          duration_ms: Date.now() - started,
          ...extra,
        });
      let outcome: Awaited<ReturnType<McpManager['call']>>;
      try {
        outcome = await manager.call(
          input.server,
          input.tool,
          input.arguments ?? {},
          ctx.signal,
          (tool) => approve(tool, input, port, ctx),
          (text) => ctx.update(text),
        );
      } catch (error) {
        if (error instanceof ToolFailure) audit('error', { code: error.code });
        throw error;
      }
      const rendered = renderMcpResult(outcome.result, ctx.host, ctx.toolUseId);
      const limited = limitOutput(rendered.text, { host: ctx.host, label: 'mcp', toolUseId: ctx.toolUseId });
      const text = wrapUntrusted(limited.text, { source: 'mcp', command: what });
      const data: McpCallData = {
        server: input.server,
        tool: input.tool,
        isError: rendered.isError,
        files: rendered.files,
      };
      audit(rendered.isError ? 'tool_error' : 'ok');
      const ui = { server: input.server, tool: input.tool };
      if (rendered.isError) {
        return fail(
          'TOOL_ERROR',
          `${what} reported an error:\n${text}`,
          'Read the error; fix the arguments or use another tool. Do not repeat the same call unchanged.',
          data,
        ) as never;
      }
      return limited.truncated
        ? partial(data, text, { lines: limited.totalLines }, ui)
        : ok(data, text, { lines: limited.totalLines }, ui);
    },
  };
}

import type Anthropic from '@anthropic-ai/sdk';
import * as z from 'zod';
import { type CircuitBreaker, circuitOpenRefusal } from '../safety/guards/circuitBreaker.ts';
import type { LoopDetector } from '../safety/guards/loopDetector.ts';
import type { AnyToolDefinition, ToolContext, ToolDefinition, ToolResult } from './protocol.ts';
import { fail, refused, renderForModel, ToolFailure } from './protocol.ts';

// The one path every tool call takes, from the model, the CLI's `keel tool`, or a test:
// lookup → schema validation → circuit breaker → loop detector → execute → bookkeeping.

export interface ToolRegistry {
  readonly tools: readonly AnyToolDefinition[];
  /** API tool definitions, sorted by name, built once (P1: frozen per session). */
  readonly apiTools: readonly Anthropic.Tool[];
  get(name: string): AnyToolDefinition | undefined;
  execute(name: string, rawInput: unknown, context: ToolContext): Promise<ExecutedCall>;
}

export interface ExecutedCall {
  readonly result: ToolResult;
  /** Exact text for the model (deterministic rendering + any loop warning). */
  readonly content: string;
  /** The loop detector asked to end the run. */
  readonly stopRun?: string;
}

export interface RegistryOptions {
  readonly loopDetector?: LoopDetector;
  readonly circuitBreaker?: CircuitBreaker;
}

// Failures that say something about the caller, not about the tool's health.
const NOT_A_TOOL_FAILURE = new Set([
  'DENIED_BY_USER',
  'LOOP_DETECTED',
  'INVALID_PARAM',
  'NOT_READ',
  'CONFLICT',
  'NO_MATCH',
  'AMBIGUOUS_MATCH',
  'OUTSIDE_WORKSPACE',
  'BLOCKED_BY_POLICY',
  'SANDBOX_DENIED',
  'NOT_FOUND',
  'CIRCUIT_OPEN',
  'ABORTED',
  'BINARY_FILE',
  'TOO_LARGE',
  'TOOL_ERROR',
]);

export function toApiTool(tool: AnyToolDefinition): Anthropic.Tool {
  const schema = z.toJSONSchema(tool.inputSchema as z.ZodType, { io: 'input' }) as Record<string, unknown>;
  delete schema.$schema;
  return {
    name: tool.name,
    description: tool.description,
    input_schema: schema as Anthropic.Tool.InputSchema,
  };
}

function formatZodError(error: z.ZodError): string {
  return error.issues
    .map((issue) => `${issue.path.length ? issue.path.join('.') : '(input)'}: ${issue.message}`)
    .join('; ');
}

export function createToolRegistry(
  tools: readonly AnyToolDefinition[],
  options: RegistryOptions = {},
): ToolRegistry {
  const byName = new Map(tools.map((t) => [t.name, t]));
  const sorted = [...tools].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  // JSON Schemas are built on first use (the first request), once: `keel tool NAME` never needs them.
  let apiTools: readonly Anthropic.Tool[] | undefined;

  async function run(tool: AnyToolDefinition, input: unknown, context: ToolContext): Promise<ToolResult> {
    try {
      return await (tool as ToolDefinition<unknown>).execute(input, context);
    } catch (error) {
      if (error instanceof ToolFailure) return fail(error.code, error.message, error.suggestion);
      if (context.signal.aborted) return fail('ABORTED', 'The call was aborted.', 'Wait for the user.');
      const message = error instanceof Error ? error.message : String(error);
      return fail('INTERNAL', `${tool.name} failed: ${message}`, 'Try a different approach or another tool.');
    }
  }

  return {
    tools: sorted,
    get apiTools() {
      apiTools ??= sorted.map(toApiTool);
      return apiTools;
    },
    get: (name) => byName.get(name),
    async execute(name, rawInput, context) {
      const started = performance.now();
      const finish = (result: ToolResult, extra = ''): ExecutedCall => {
        const stamped: ToolResult = {
          ...result,
          stats: { ...result.stats, time_ms: Math.round(performance.now() - started) },
        };
        return { result: stamped, content: renderForModel(stamped) + extra };
      };
      const tool = byName.get(name);
      if (!tool) {
        const known = sorted.map((t) => t.name).join(', ');
        return finish(fail('NOT_FOUND', `There is no tool named "${name}".`, `Use one of: ${known}.`));
      }
      const parsed = tool.inputSchema.safeParse(rawInput);
      if (!parsed.success) {
        return finish(
          fail(
            'INVALID_PARAM',
            `Invalid input for ${name}: ${formatZodError(parsed.error)}`,
            'Fix the input to match the tool schema and call it again.',
          ),
        );
      }
      const circuit = (tool as ToolDefinition<unknown>).circuitKey?.(parsed.data) ?? name;
      const breaker = options.circuitBreaker?.check(circuit);
      if (breaker?.open) return finish(refused(circuitOpenRefusal(circuit, breaker.retryInMs)));
      const verdict = options.loopDetector?.check(name, parsed.data);
      if (verdict?.action === 'block' || verdict?.action === 'stop') {
        const call = finish(
          fail(
            'LOOP_DETECTED',
            verdict.message,
            verdict.suggestion ??
              'Stop repeating this call. Change approach, or tell the user what is blocking you.',
          ),
        );
        return verdict.action === 'stop' ? { ...call, stopRun: verdict.message } : call;
      }
      const result = await run(tool, parsed.data, context);
      if (result.status === 'error' && result.error && !NOT_A_TOOL_FAILURE.has(result.error.code)) {
        options.circuitBreaker?.record(circuit, false);
      } else if (result.status !== 'error') {
        options.circuitBreaker?.record(circuit, true);
      }
      const after = options.loopDetector?.record(name, parsed.data, renderForModel(result), result.status);
      if (after && after.action !== 'allow') {
        const note = `\n\n<system-reminder>${after.message}</system-reminder>`;
        const call = finish(result, note);
        return after.action === 'stop' ? { ...call, stopRun: after.message } : call;
      }
      return finish(result);
    },
  };
}

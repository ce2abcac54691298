import type Anthropic from '@anthropic-ai/sdk';
import { z } from 'zod';
import { type CircuitBreaker, circuitOpenRefusal } from '../safety/guards/circuitBreaker.ts';
import type { LoopDetector } from '../safety/guards/loopDetector.ts';
import type { AnyToolDefinition, ReadLedger, ToolContext, ToolDefinition, ToolResult } from './protocol.ts';
import { fail, refused, renderForModel, ToolFailure } from './protocol.ts';

// The one path every tool call takes, from the model, the CLI's `keel tool`, or a test:
// lookup → schema validation → circuit breaker → loop detector → execute → bookkeeping.

export interface ToolRegistry {
  readonly tools: readonly AnyToolDefinition[];
  /** API tool definitions, sorted by name, built once (P1: frozen per session). */
  readonly apiTools: readonly Anthropic.Tool[];
  get(name: string): AnyToolDefinition | undefined;
  execute(name: string, rawInput: unknown, context: ToolContext): Promise<ExecutedCall>;
  /**
   * For tools marked `concurrentRead`: starts the tool at once and leaves the guards (circuit
   * breaker, loop detector) to `commit()`, which the caller invokes in call order. Calls of a batch
   * thus run together, yet every verdict and result is the one running them one after another gives;
   * a call refused at commit (or `discard()`ed) is dropped with what it recorded in the read ledger.
   */
  begin(name: string, rawInput: unknown, context: ToolContext): StartedCall;
}

export interface StartedCall {
  /** Resolves when the tool itself has finished (nothing is committed yet). */
  readonly ran: Promise<void>;
  commit(): Promise<ExecutedCall>;
  /** Waits for the tool, then drops its result (a steering message or an abort came first). */
  discard(): Promise<void>;
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

/** A read ledger whose records reach the session's only when the call is committed. */
function deferredLedger(ledger: ReadLedger): { view: ReadLedger; apply(): void } {
  const pending: (() => void)[] = [];
  const local = new Map<string, string | undefined>();
  return {
    view: {
      recordRead(path, hash) {
        local.set(path, hash);
        pending.push(() => ledger.recordRead(path, hash));
      },
      lastHash: (path) => (local.has(path) ? local.get(path) : ledger.lastHash(path)),
      recordWrite(path, hash) {
        local.set(path, hash);
        pending.push(() => ledger.recordWrite(path, hash));
      },
      forget(path) {
        local.set(path, undefined);
        pending.push(() => ledger.forget(path));
      },
    },
    apply() {
      for (const record of pending.splice(0)) record();
    },
  };
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

  const finish = (result: ToolResult, started: number, ended: number, extra = ''): ExecutedCall => {
    const stamped: ToolResult = {
      ...result,
      stats: { ...result.stats, time_ms: Math.round(ended - started) },
    };
    return { result: stamped, content: renderForModel(stamped) + extra };
  };

  /** Lookup and schema validation: the parsed input, or the refusal to return. */
  function admit(
    name: string,
    rawInput: unknown,
    started: number,
  ): { tool: AnyToolDefinition; data: unknown } | { refusal: ExecutedCall } {
    const tool = byName.get(name);
    if (!tool) {
      const known = sorted.map((t) => t.name).join(', ');
      return {
        refusal: finish(
          fail('NOT_FOUND', `There is no tool named "${name}".`, `Use one of: ${known}.`),
          started,
          performance.now(),
        ),
      };
    }
    const parsed = tool.inputSchema.safeParse(rawInput);
    if (!parsed.success) {
      return {
        refusal: finish(
          fail(
            'INVALID_PARAM',
            `Invalid input for ${name}: ${formatZodError(parsed.error)}`,
            'Fix the input to match the tool schema and call it again.',
          ),
          started,
          performance.now(),
        ),
      };
    }
    return { tool, data: parsed.data };
  }

  /** Circuit breaker and loop detector, before the call: a refusal, or undefined to go ahead. */
  function guardBefore(
    tool: AnyToolDefinition,
    name: string,
    data: unknown,
    started: number,
  ): ExecutedCall | undefined {
    const circuit = (tool as ToolDefinition<unknown>).circuitKey?.(data) ?? name;
    const breaker = options.circuitBreaker?.check(circuit);
    if (breaker?.open)
      return finish(refused(circuitOpenRefusal(circuit, breaker.retryInMs)), started, performance.now());
    const verdict = options.loopDetector?.check(name, data);
    if (verdict?.action === 'block' || verdict?.action === 'stop') {
      const call = finish(
        fail(
          'LOOP_DETECTED',
          verdict.message,
          verdict.suggestion ??
            'Stop repeating this call. Change approach, or tell the user what is blocking you.',
        ),
        started,
        performance.now(),
      );
      return verdict.action === 'stop' ? { ...call, stopRun: verdict.message } : call;
    }
    return undefined;
  }

  /** Bookkeeping after the call: the breaker's and the loop detector's records, a loop warning. */
  function guardAfter(
    tool: AnyToolDefinition,
    name: string,
    data: unknown,
    result: ToolResult,
    started: number,
    ended: number,
  ): ExecutedCall {
    const circuit = (tool as ToolDefinition<unknown>).circuitKey?.(data) ?? name;
    if (result.status === 'error' && result.error && !NOT_A_TOOL_FAILURE.has(result.error.code)) {
      options.circuitBreaker?.record(circuit, false);
    } else if (result.status !== 'error') {
      options.circuitBreaker?.record(circuit, true);
    }
    const after = options.loopDetector?.record(name, data, renderForModel(result), result.status);
    if (after && after.action !== 'allow') {
      const note = `\n\n<system-reminder>${after.message}</system-reminder>`;
      const call = finish(result, started, ended, note);
      return after.action === 'stop' ? { ...call, stopRun: after.message } : call;
    }
    return finish(result, started, ended);
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
      const checked = admit(name, rawInput, started);
      if ('refusal' in checked) return checked.refusal;
      const refusal = guardBefore(checked.tool, name, checked.data, started);
      if (refusal) return refusal;
      const result = await run(checked.tool, checked.data, context);
      return guardAfter(checked.tool, name, checked.data, result, started, performance.now());
    },
    begin(name, rawInput, context) {
      const started = performance.now();
      const checked = admit(name, rawInput, started);
      if ('refusal' in checked) {
        const refusal = checked.refusal;
        return { ran: Promise.resolve(), commit: async () => refusal, discard: async () => {} };
      }
      const { tool, data } = checked;
      const ledger = deferredLedger(context.ledger);
      let ended = started;
      const running = run(tool, data, { ...context, ledger: ledger.view }).then((result) => {
        ended = performance.now();
        return result;
      });
      return {
        ran: running.then(() => {}),
        async commit() {
          const refusal = guardBefore(tool, name, data, started);
          const result = await running;
          if (refusal) return refusal;
          ledger.apply();
          return guardAfter(tool, name, data, result, started, ended);
        },
        async discard() {
          await running;
        },
      };
    },
  };
}

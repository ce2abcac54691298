import {
  type Attributes,
  type Context,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
} from '@opentelemetry/api';
import type { AgentEvent } from '../events.ts';
import type { TelemetryConfig } from './config.ts';
import { setActiveTraceparent } from './propagation.ts';

// OpenTelemetry export of a session's events, following the GenAI semantic conventions:
// `invoke_agent keel` per run, `chat {model}` per model call and `execute_tool {name}` per tool call,
// both children of the run; a sub-agent (Task) is an `invoke_agent` span under its Task call's span,
// with its own chat and tool spans under it. Loaded only through a dynamic import when an endpoint is configured.
// The provider is private (never registered globally), so nothing else in the process starts
// exporting by accident.

const PROVIDER = 'anthropic';

export interface Telemetry {
  /** Subscribe this to a session. */
  readonly listener: (event: AgentEvent) => void;
  /** Ends open spans and flushes the exporter. */
  shutdown(): Promise<void>;
}

export interface TelemetryOptions {
  readonly requestModel: string;
  readonly serviceVersion?: string;
  /** W3C traceparent of a caller (e.g. TRACEPARENT of the process): runs become its children. */
  readonly parentTraceparent?: string;
}

const traceparentOf = (span: Span) => {
  const c = span.spanContext();
  return `00-${c.traceId}-${c.spanId}-0${(c.traceFlags & 1).toString()}`;
};

export async function startTelemetry(config: TelemetryConfig, options: TelemetryOptions): Promise<Telemetry> {
  // Dynamic imports: the bundle keeps them as imports of node_modules, evaluated only here.
  const [
    { parseTraceParent },
    http,
    proto,
    { resourceFromAttributes },
    { BatchSpanProcessor, TracerProvider },
  ] = await Promise.all([
    import('@opentelemetry/core'),
    import('@opentelemetry/exporter-trace-otlp-http'),
    import('@opentelemetry/exporter-trace-otlp-proto'),
    import('@opentelemetry/resources'),
    import('@opentelemetry/sdk-trace'),
  ]);
  const JsonExporter = http.OTLPTraceExporter;
  const ProtoExporter = proto.OTLPTraceExporter;
  const exporterConfig = config.url ? { url: config.url } : {};
  const exporter =
    config.protocol === 'http/json' ? new JsonExporter(exporterConfig) : new ProtoExporter(exporterConfig);
  const provider = new TracerProvider({
    resource: resourceFromAttributes({
      'service.name': process.env.OTEL_SERVICE_NAME || 'keel',
      ...(options.serviceVersion ? { 'service.version': options.serviceVersion } : {}),
    }),
    spanProcessors: [new BatchSpanProcessor({ exporter })],
  });
  const tracer = provider.getTracer('keel', options.serviceVersion);
  const callerContext = (() => {
    const parsed = options.parentTraceparent ? parseTraceParent(options.parentTraceparent) : null;
    return parsed ? trace.setSpanContext(ROOT_CONTEXT, { ...parsed, isRemote: true }) : ROOT_CONTEXT;
  })();

  let run: { span: Span; ctx: Context } | undefined;
  let pendingChat: Span | undefined;
  const tools = new Map<string, Span>();
  const content = config.includeContent;
  // Sub-agents (Task): an `invoke_agent` span under the parent's `execute_tool Task` span, with the
  // sub-agent's model calls and tool calls under it. Its tool events carry no call id: open spans
  // are matched by name, oldest first.
  const subagents = new Map<string, { span: Span; ctx: Context; tools: { name: string; span: Span }[] }>();

  const startRun = (e: Extract<AgentEvent, { type: 'agent_start' }>) => {
    const attributes: Attributes = {
      'gen_ai.operation.name': 'invoke_agent',
      'gen_ai.provider.name': PROVIDER,
      'gen_ai.agent.name': 'keel',
      'gen_ai.conversation.id': e.sessionId,
      'gen_ai.request.model': options.requestModel,
      'keel.run.id': e.runId,
    };
    if (content)
      attributes['gen_ai.input.messages'] = JSON.stringify([
        { role: 'user', parts: [{ type: 'text', content: e.prompt }] },
      ]);
    const span = tracer.startSpan(
      'invoke_agent keel',
      { kind: SpanKind.INTERNAL, startTime: e.ts, attributes },
      callerContext,
    );
    run = { span, ctx: trace.setSpan(callerContext, span) };
  };
  const endChat = () => {
    pendingChat?.end();
    pendingChat = undefined;
  };

  const listener = (e: AgentEvent) => {
    switch (e.type) {
      case 'agent_start':
        startRun(e);
        break;
      case 'model_call': {
        if (!run) break;
        const sub = e.record.agent ? subagents.get(e.record.agent) : undefined;
        if (sub) {
          const r = e.record;
          tracer
            .startSpan(
              `chat ${r.model}`,
              {
                kind: SpanKind.CLIENT,
                startTime: e.ts - r.latency_ms,
                attributes: {
                  'gen_ai.operation.name': 'chat',
                  'gen_ai.provider.name': PROVIDER,
                  'gen_ai.request.model': r.model,
                  'gen_ai.response.model': r.model,
                  'gen_ai.usage.input_tokens': r.input + r.cache_read + r.cache_write,
                  'gen_ai.usage.output_tokens': r.output,
                  'gen_ai.usage.cache_read.input_tokens': r.cache_read,
                  'gen_ai.usage.cache_creation.input_tokens': r.cache_write,
                  'keel.prefix_hash': r.prefix_hash,
                  'keel.cost_usd': r.cost_usd,
                },
              },
              sub.ctx,
            )
            .end(e.ts);
          break;
        }
        endChat();
        const r = e.record;
        pendingChat = tracer.startSpan(
          `chat ${options.requestModel}`,
          {
            kind: SpanKind.CLIENT,
            startTime: e.ts - r.latency_ms,
            attributes: {
              'gen_ai.operation.name': 'chat',
              'gen_ai.provider.name': PROVIDER,
              'gen_ai.request.model': options.requestModel,
              'gen_ai.response.model': r.model,
              'gen_ai.conversation.id': e.sessionId,
              // Input tokens include the cached ones; the cache parts are reported separately.
              'gen_ai.usage.input_tokens': r.input + r.cache_read + r.cache_write,
              'gen_ai.usage.output_tokens': r.output,
              'gen_ai.usage.cache_read.input_tokens': r.cache_read,
              'gen_ai.usage.cache_creation.input_tokens': r.cache_write,
              'keel.prefix_hash': r.prefix_hash,
              'keel.context.stage': r.stage,
              'keel.cost_usd': r.cost_usd,
              'keel.ttft_ms': r.ttft_ms,
            },
          },
          run.ctx,
        );
        // The span ends when the reply's stop reason is known (message_end follows at once).
        break;
      }
      case 'message_end': {
        if (!pendingChat) break;
        const m = e.message;
        pendingChat.setAttribute('gen_ai.response.finish_reasons', [m.stopReason ?? 'unknown']);
        if (content)
          pendingChat.setAttribute(
            'gen_ai.output.messages',
            JSON.stringify([{ role: 'assistant', parts: m.content }]),
          );
        pendingChat.end(e.ts);
        pendingChat = undefined;
        break;
      }
      case 'error': {
        if (!run) break;
        // A model call that failed after its retries: a chat span with the error.
        const span = tracer.startSpan(
          `chat ${options.requestModel}`,
          {
            kind: SpanKind.CLIENT,
            startTime: e.ts,
            attributes: {
              'gen_ai.operation.name': 'chat',
              'gen_ai.provider.name': PROVIDER,
              'gen_ai.request.model': options.requestModel,
              'error.type': e.code,
            },
          },
          run.ctx,
        );
        span.setStatus({ code: SpanStatusCode.ERROR, message: e.message });
        span.end(e.ts);
        break;
      }
      case 'tool_start': {
        if (!run) break;
        const attributes: Attributes = {
          'gen_ai.operation.name': 'execute_tool',
          'gen_ai.tool.name': e.name,
          'gen_ai.tool.call.id': e.toolUseId,
          'gen_ai.tool.type': 'function',
        };
        if (content) attributes['gen_ai.tool.call.arguments'] = JSON.stringify(e.input);
        const span = tracer.startSpan(
          `execute_tool ${e.name}`,
          { kind: SpanKind.INTERNAL, startTime: e.ts, attributes },
          run.ctx,
        );
        tools.set(e.toolUseId, span);
        setActiveTraceparent(traceparentOf(span));
        break;
      }
      case 'tool_end': {
        const span = tools.get(e.toolUseId);
        if (!span) break;
        tools.delete(e.toolUseId);
        setActiveTraceparent(undefined);
        if (e.result.status === 'error') {
          span.setAttribute('error.type', e.result.error?.code ?? 'error');
          span.setStatus({
            code: SpanStatusCode.ERROR,
            message: e.result.error?.message ?? e.result.text.slice(0, 200),
          });
        }
        if (content) span.setAttribute('gen_ai.tool.call.result', e.result.text);
        span.end(e.ts);
        break;
      }
      case 'subagent_start': {
        const parentTool = tools.get(e.toolUseId);
        if (!run || !parentTool) break;
        const parentCtx = trace.setSpan(run.ctx, parentTool);
        const span = tracer.startSpan(
          `invoke_agent ${e.description}`,
          {
            kind: SpanKind.INTERNAL,
            startTime: e.ts,
            attributes: {
              'gen_ai.operation.name': 'invoke_agent',
              'gen_ai.provider.name': PROVIDER,
              'gen_ai.agent.name': 'keel-subagent',
              'gen_ai.agent.id': e.agentId,
              'gen_ai.agent.description': e.description,
              'keel.subagent.mode': e.mode,
            },
          },
          parentCtx,
        );
        subagents.set(e.agentId, { span, ctx: trace.setSpan(parentCtx, span), tools: [] });
        break;
      }
      case 'subagent_tool': {
        const sub = subagents.get(e.agentId);
        if (!sub) break;
        if (e.phase === 'start') {
          const attributes: Attributes = {
            'gen_ai.operation.name': 'execute_tool',
            'gen_ai.tool.name': e.name,
            'gen_ai.tool.type': 'function',
          };
          if (content && e.input !== undefined)
            attributes['gen_ai.tool.call.arguments'] = JSON.stringify(e.input);
          const span = tracer.startSpan(
            `execute_tool ${e.name}`,
            { kind: SpanKind.INTERNAL, startTime: e.ts, attributes },
            sub.ctx,
          );
          sub.tools.push({ name: e.name, span });
          // Commands and MCP requests of this call join the sub-agent's branch of the trace.
          setActiveTraceparent(traceparentOf(span));
          break;
        }
        const index = sub.tools.findIndex((t) => t.name === e.name);
        if (index < 0) break;
        const [open] = sub.tools.splice(index, 1);
        if (!open) break;
        if (e.status === 'error') {
          open.span.setAttribute('error.type', e.errorCode ?? 'error');
          open.span.setStatus({
            code: SpanStatusCode.ERROR,
            ...(e.errorCode ? { message: e.errorCode } : {}),
          });
        }
        open.span.end(e.ts);
        const parentTool = tools.get(e.toolUseId);
        setActiveTraceparent(parentTool ? traceparentOf(parentTool) : undefined);
        break;
      }
      case 'auto_classifier': {
        // On the Bash call's span (a sub-agent's call: on the run's span).
        const span = tools.get(e.toolUseId) ?? run?.span;
        span?.addEvent(
          'keel.auto_approval',
          {
            'keel.auto.decision': e.decision,
            'keel.auto.reason': e.reason,
            'keel.auto.model': e.model,
            'keel.auto.latency_ms': e.latencyMs,
            ...(e.failure ? { 'keel.auto.failure': e.failure } : {}),
          },
          e.ts,
        );
        break;
      }
      case 'subagent_end': {
        const sub = subagents.get(e.agentId);
        if (!sub) break;
        subagents.delete(e.agentId);
        for (const t of sub.tools) t.span.end(e.ts);
        sub.span.setAttribute('keel.run.status', e.status);
        sub.span.setAttribute('keel.cost_usd', e.costUsd);
        sub.span.setAttribute('keel.turns', e.turns);
        if (e.status === 'failed')
          sub.span.setStatus({ code: SpanStatusCode.ERROR, message: 'sub-agent failed' });
        sub.span.end(e.ts);
        break;
      }
      case 'agent_end': {
        if (!run) break;
        for (const sub of subagents.values()) {
          for (const t of sub.tools) t.span.end(e.ts);
          sub.span.end(e.ts);
        }
        subagents.clear();
        endChat();
        for (const span of tools.values()) span.end(e.ts);
        tools.clear();
        setActiveTraceparent(undefined);
        run.span.setAttribute('keel.run.status', e.status);
        if (e.status === 'failed') {
          run.span.setAttribute('error.type', 'run_failed');
          run.span.setStatus({ code: SpanStatusCode.ERROR, ...(e.error ? { message: e.error } : {}) });
        }
        run.span.end(e.ts);
        run = undefined;
        break;
      }
      default:
        break;
    }
  };
  return {
    listener,
    async shutdown() {
      endChat();
      run?.span.end();
      setActiveTraceparent(undefined);
      await provider.shutdown();
    },
  };
}

import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  type CallToolResult,
  ErrorCode,
  McpError,
  ToolListChangedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import type { McpTransportSpec } from './config.ts';
import type { SandboxPort } from '../host.ts';
import { traceEnv } from '../telemetry/propagation.ts';
import { CLIENT_CAPABILITIES, installClientHandlers, type McpClientHooks } from './clientFeatures.ts';
import { createMcpAuth, type McpAuth } from './oauthProvider.ts';
import { createOAuthStore } from './oauthStore.ts';
import { createStdioServerTransport, type StdioServerTransport, spawnMcpServer } from './spawn.ts';

// One live connection to one MCP server, on the official SDK. The manager imports this module
// dynamically, the first time a server has to start: a session without MCP never loads the SDK.

export interface McpToolInfo {
  readonly name: string;
  readonly title?: string;
  readonly description: string;
  readonly inputSchema: Record<string, unknown>;
  readonly readOnlyHint: boolean;
}

export interface McpConnection {
  readonly tools: readonly McpToolInfo[];
  /** The server's `instructions` from initialize, if any. */
  readonly instructions?: string;
  /** undefined = valid; else the validator's message. */
  validate(tool: McpToolInfo, args: unknown): string | undefined;
  callTool(
    name: string,
    args: Record<string, unknown>,
    options: { timeoutMs: number; signal: AbortSignal; onProgress?: (text: string) => void },
  ): Promise<CallToolResult>;
  /** Called once when the connection ends unexpectedly (the process died, the stream closed). */
  onLost(listener: (why: string) => void): void;
  stderrTail(): string;
  close(): Promise<void>;
  classify(error: unknown): 'timeout' | 'closed' | 'other';
}

export class McpStartError extends Error {
  constructor(
    message: string,
    readonly stderrTail: string,
    readonly timedOut = false,
  ) {
    super(message);
    this.name = 'McpStartError';
  }
}

/** Why a call failed, in the terms the manager acts on. */
export function classifyCallError(error: unknown): 'timeout' | 'closed' | 'other' {
  if (error instanceof McpError) {
    if (error.code === ErrorCode.RequestTimeout) return 'timeout';
    if (error.code === ErrorCode.ConnectionClosed) return 'closed';
  }
  return 'other';
}

const CLIENT_INFO = { name: 'keel', version: '0.1.0' };

function makeTransport(
  spec: McpTransportSpec,
  sandbox: SandboxPort | undefined,
  auth: McpAuth | undefined,
): Transport {
  if (spec.type === 'stdio') {
    return createStdioServerTransport(
      {
        command: spec.command,
        args: spec.args,
        env: Object.fromEntries(Object.entries(spec.env).map(([k, v]) => [k, String(v)])),
        cwd: spec.cwd ?? process.cwd(),
      },
      (s) => spawnMcpServer(s, sandbox),
    );
  }
  const init = {
    requestInit: { headers: { ...spec.headers } },
    ...(auth ? { authProvider: auth.provider } : {}),
  };
  return spec.type === 'sse'
    ? new SSEClientTransport(new URL(spec.url), init)
    : new StreamableHTTPClientTransport(new URL(spec.url), init);
}

function withTimeout<T>(
  promise: Promise<T>,
  ms: number,
  signal: AbortSignal | undefined,
  what: string,
  /** True while a human signs in: that wait has its own limit and does not count here. */
  paused: () => boolean = () => false,
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let timer: ReturnType<typeof setTimeout>;
    const arm = () => {
      timer = setTimeout(() => {
        if (paused()) arm();
        else reject(new McpStartError(`${what} did not finish within ${ms} ms`, '', true));
      }, ms);
    };
    arm();
    const onAbort = () => reject(new Error('aborted'));
    signal?.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (v) => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e) => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        reject(e);
      },
    );
  });
}

/**
 * OAuth for an HTTP server, unless the config sends its own Authorization header (a static token the
 * user chose). Without a 401 the provider is only asked for stored tokens: a server without auth never
 * sees a difference.
 */
async function authFor(
  spec: McpTransportSpec,
  hooks: McpClientHooks | undefined,
): Promise<McpAuth | undefined> {
  if (spec.type === 'stdio' || !hooks) return undefined;
  if (Object.keys(spec.headers).some((h) => h.toLowerCase() === 'authorization')) return undefined;
  const o = spec.oauth;
  const authorize = hooks.authorize;
  const auth = await createMcpAuth({
    server: hooks.server,
    url: spec.url,
    store: hooks.tokenStore
      ? await hooks.tokenStore(hooks.server, spec.url)
      : createOAuthStore(hooks.server, spec.url, hooks.env),
    authorize: authorize ? (request) => authorize(request) : async () => false,
    ...(o?.clientId
      ? { client: { clientId: o.clientId, ...(o.clientSecret ? { clientSecret: o.clientSecret } : {}) } }
      : {}),
    ...(o?.scope ? { scope: o.scope } : {}),
    ...(o?.grant ? { grant: o.grant } : {}),
    ...(o?.clientIdMetadataUrl ? { clientIdMetadataUrl: o.clientIdMetadataUrl } : {}),
    ...(o?.privateKeyJwt?.privateKey
      ? { privateKeyJwt: { privateKey: o.privateKeyJwt.privateKey, alg: o.privateKeyJwt.alg } }
      : {}),
    ...(o?.issuer ? { issuer: o.issuer } : {}),
    ...(o?.crossAppAccess ? { crossAppAccess: o.crossAppAccess } : {}),
  });
  await auth.prepare();
  return auth;
}

/** Sign-ins per connect or call: one, plus one step-up to a wider scope; then it is an error. */
const MAX_SIGN_INS = 2;

export async function connectMcpServer(
  spec: McpTransportSpec,
  options: { startTimeoutMs: number; signal?: AbortSignal; sandbox?: SandboxPort; client?: McpClientHooks },
): Promise<McpConnection> {
  const auth = await authFor(spec, options.client);
  let transport = makeTransport(spec, options.sandbox, auth);
  const stdio = spec.type === 'stdio' ? (transport as StdioServerTransport) : undefined;
  const tail = () => stdio?.stderrTail() ?? '';
  let closing = false;
  let lostWhy: string | undefined;
  const lostListeners: ((why: string) => void)[] = [];
  // Until startup is done a closed connection is a failed start (thrown by connect), not a lost one:
  // the attempt before a sign-in closes on its way out.
  let started = false;
  const lost = (why: string) => {
    if (!started || closing || lostWhy !== undefined) return;
    lostWhy = why;
    for (const l of lostListeners) l(why);
  };
  const newClient = () => {
    const c = new Client(CLIENT_INFO, { capabilities: CLIENT_CAPABILITIES });
    installClientHandlers(c, options.client);
    // A client replaced after a sign-in closes too: only the current one's end is a lost connection.
    c.onclose = () =>
      c === client &&
      lost(
        stdio
          ? `the server process ${stdio.exitDescription() ?? 'closed its pipes'}`
          : 'the connection closed',
      );
    return c;
  };
  let client = newClient();
  let signingIn = false;
  /** After the SDK asked for a sign-in: wait for the browser's code and exchange it. */
  const finishSignIn = async (error: unknown): Promise<boolean> => {
    const code = error instanceof UnauthorizedError ? auth?.takePendingCode() : undefined;
    if (!code) return false;
    signingIn = true;
    try {
      await (transport as StreamableHTTPClientTransport | SSEClientTransport).finishAuth(await code);
    } finally {
      signingIn = false;
    }
    return true;
  };

  const listAll = async (): Promise<McpToolInfo[]> => {
    const all: McpToolInfo[] = [];
    let cursor: string | undefined;
    do {
      const page = await client.listTools(cursor ? { cursor } : {});
      for (const t of page.tools) {
        all.push({
          name: t.name,
          ...(t.title ? { title: t.title } : {}),
          description: t.description ?? '',
          inputSchema: t.inputSchema as Record<string, unknown>,
          readOnlyHint: t.annotations?.readOnlyHint === true,
        });
      }
      cursor = page.nextCursor;
    } while (cursor);
    return all;
  };
  const startup = async () => {
    for (let attempt = 0; ; attempt++) {
      try {
        await client.connect(transport);
        const listed = await listAll();
        auth?.succeeded();
        return listed;
      } catch (error) {
        if (attempt >= MAX_SIGN_INS || !(await finishSignIn(error))) throw error;
        // A started transport cannot start again: a fresh client and transport, now with tokens.
        const old = client;
        transport = makeTransport(spec, options.sandbox, auth);
        client = newClient();
        await old.close().catch(() => undefined);
      }
    }
  };
  let tools: McpToolInfo[];
  try {
    tools = await withTimeout(startup(), options.startTimeoutMs, options.signal, 'startup', () => signingIn);
    started = true;
  } catch (error) {
    closing = true;
    await transport.close().catch(() => undefined);
    await auth?.dispose();
    const timedOut = error instanceof McpStartError && error.timedOut;
    const exited = stdio?.exitDescription();
    const message = timedOut
      ? `it did not finish starting within ${Math.round(options.startTimeoutMs / 1000)} s`
      : exited
        ? `the process ${exited}`
        : (error as Error).message;
    throw new McpStartError(message, tail(), timedOut);
  }
  // The server's tool list may change (list_changed): McpSearch and McpCall see the new one. The
  // prompt does not move — it never held a schema.
  client.setNotificationHandler(ToolListChangedNotificationSchema, async () => {
    try {
      tools = await listAll();
      compiled.clear();
    } catch {
      // keep the last list; the next call will say what is wrong
    }
  });
  const validator = new AjvJsonSchemaValidator();
  const compiled = new Map<string, (input: unknown) => { valid: boolean; errorMessage?: string }>();
  const instructions = client.getInstructions();

  return {
    get tools() {
      return tools;
    },
    ...(instructions ? { instructions } : {}),
    validate(tool, args) {
      let check = compiled.get(tool.name);
      if (!check) {
        try {
          check = validator.getValidator(tool.inputSchema as never);
        } catch {
          // A schema the validator cannot compile: let the server judge the arguments.
          check = () => ({ valid: true });
        }
        compiled.set(tool.name, check);
      }
      const result = check(args);
      return result.valid ? undefined : (result.errorMessage ?? 'the arguments do not match the schema');
    },
    async callTool(name, args, { timeoutMs, signal, onProgress }) {
      if (lostWhy !== undefined) throw new Error(lostWhy);
      // A signal of its own per call: the SDK leaves its abort listener on the signal it is given, and
      // the run's signal lives for many calls.
      const local = new AbortController();
      const forward = () => local.abort(signal.reason);
      if (signal.aborted) local.abort(signal.reason);
      else signal.addEventListener('abort', forward, { once: true });
      const onprogress = onProgress
        ? (p: { progress: number; total?: number; message?: string }) =>
            onProgress(`${p.progress}${p.total ? `/${p.total}` : ''}${p.message ? ` ${p.message}` : ''}`)
        : undefined;
      // The running tool call's W3C trace context rides in `_meta` (as MCP's OpenTelemetry
      // conventions put it), so a traced server's spans join Keel's trace.
      const traceparent = traceEnv().TRACEPARENT;
      const call = () =>
        client.callTool(
          { name, arguments: args, ...(traceparent ? { _meta: { traceparent } } : {}) },
          undefined,
          {
            timeout: timeoutMs,
            signal: local.signal,
            ...(onprogress ? { onprogress } : {}),
          },
        );
      try {
        for (let attempt = 0; ; attempt++) {
          try {
            const result = (await call()) as CallToolResult;
            auth?.succeeded();
            return result;
          } catch (error) {
            // Step-up: the server wants a wider scope for this tool (403 insufficient_scope).
            if (attempt >= MAX_SIGN_INS || !(await finishSignIn(error))) throw error;
          }
        }
      } finally {
        signal.removeEventListener('abort', forward);
      }
    },
    onLost(listener) {
      lostListeners.push(listener);
    },
    stderrTail: tail,
    classify: classifyCallError,
    async close() {
      closing = true;
      await client.close().catch(() => undefined);
      await transport.close().catch(() => undefined);
      await auth?.dispose();
    },
  };
}

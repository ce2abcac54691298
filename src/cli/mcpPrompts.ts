import { spawn } from 'node:child_process';
import * as readline from 'node:readline';
import type { McpAuthorizationRequest, McpElicitationAnswer, McpElicitationRequest } from '../agent/host.ts';
import type { RunArgs } from './args.ts';

// The CLI's answers to what an MCP server asks of the user: input (elicitation) and a sign-in (OAuth).
//
// - On a terminal without --approve: the user is asked. An elicitation answer is data for the server
//   only; it approves nothing in Keel. The sign-in URL is opened only after the user says yes.
// - --approve all (the user allowed up front what a run asks): an elicitation whose every required
//   field has a default is accepted with those defaults (the server's own suggestion, nothing of the
//   user's), anything else is declined; a sign-in opens the URL ($BROWSER, else the system opener).
// - --approve never / safe, or no terminal: elicitations are declined (the spec's `decline`, at once,
//   never a hang) and a sign-in fails with the URL printed.

type Policy = RunArgs['approve'];
type Field = { type?: unknown; enum?: unknown; default?: unknown; description?: unknown; title?: unknown };

function fieldsOf(schema: Readonly<Record<string, unknown>>): [string, Field][] {
  const props = schema.properties;
  return props && typeof props === 'object' ? Object.entries(props as Record<string, Field>) : [];
}

function requiredOf(schema: Readonly<Record<string, unknown>>): string[] {
  return Array.isArray(schema.required)
    ? schema.required.filter((r): r is string => typeof r === 'string')
    : [];
}

type Value = string | number | boolean | string[];

/** The schema's defaults, if they answer every required field; else undefined. */
export function defaultsAnswer(schema: Readonly<Record<string, unknown>>): Record<string, Value> | undefined {
  const content: Record<string, Value> = {};
  for (const [name, field] of fieldsOf(schema)) {
    const d = field.default;
    if (typeof d === 'string' || typeof d === 'number' || typeof d === 'boolean') content[name] = d;
    else if (Array.isArray(d) && d.every((x) => typeof x === 'string')) content[name] = d as string[];
  }
  return requiredOf(schema).every((r) => r in content) ? content : undefined;
}

/** A typed value from what the user typed, or an error sentence. */
export function parseField(field: Field, text: string): Value | Error {
  const t = text.trim();
  if (Array.isArray(field.enum) && !field.enum.includes(t))
    return new Error(`one of: ${field.enum.join(', ')}`);
  if (field.type === 'boolean') {
    if (/^(y|yes|true)$/i.test(t)) return true;
    if (/^(n|no|false)$/i.test(t)) return false;
    return new Error('yes or no');
  }
  if (field.type === 'number' || field.type === 'integer') {
    const n = Number(t);
    if (t === '' || !Number.isFinite(n) || (field.type === 'integer' && !Number.isInteger(n)))
      return new Error(field.type === 'integer' ? 'a whole number' : 'a number');
    return n;
  }
  return t;
}

function ask(rl: readline.Interface, question: string, signal?: AbortSignal): Promise<string | undefined> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve(undefined);
    signal?.addEventListener('abort', () => resolve(undefined), { once: true });
    rl.question(question, (a) => resolve(a));
  });
}

async function askOnTerminal(
  request: McpElicitationRequest,
  signal?: AbortSignal,
): Promise<McpElicitationAnswer> {
  const rl = readline.createInterface({ input: process.stdin, output: process.stderr });
  try {
    process.stderr.write(
      `\n? MCP server "${request.server}" asks for input (your answer goes to that server only):\n  ${request.message.replace(/\n/g, '\n  ')}\n`,
    );
    const go = await ask(rl, 'Answer? [y/N/c(ancel)]: ', signal);
    if (go === undefined || /^c/i.test(go.trim())) return { action: 'cancel' };
    if (!/^y(es)?$/i.test(go.trim())) return { action: 'decline' };
    const content: Record<string, Value> = {};
    const required = new Set(requiredOf(request.requestedSchema));
    for (const [name, field] of fieldsOf(request.requestedSchema)) {
      const label = String(field.title ?? name);
      const hint =
        field.default !== undefined ? ` [${String(field.default)}]` : required.has(name) ? '' : ' (optional)';
      for (let tries = 0; tries < 3; tries++) {
        const text = await ask(rl, `  ${label}${hint}: `, signal);
        if (text === undefined) return { action: 'cancel' };
        if (text.trim() === '' && !required.has(name)) break;
        if (text.trim() === '' && field.default !== undefined) break; // the SDK applies the default
        const value = parseField(field, text);
        if (!(value instanceof Error)) {
          content[name] = value;
          break;
        }
        process.stderr.write(`  ${label} must be ${value.message}\n`);
        if (tries === 2) return { action: 'decline' };
      }
    }
    return { action: 'accept', content };
  } finally {
    rl.close();
  }
}

export function cliElicit(
  policy: Policy,
  isTTY: boolean,
): ((request: McpElicitationRequest, signal?: AbortSignal) => Promise<McpElicitationAnswer>) | undefined {
  if (policy === 'all') {
    return async (request) => {
      const content = defaultsAnswer(request.requestedSchema);
      process.stderr.write(
        `keel: MCP server "${request.server}" asked for input; ${content ? 'answered with its own defaults (--approve all)' : 'declined (no terminal to ask on)'}\n`,
      );
      return content ? { action: 'accept', content } : { action: 'decline' };
    };
  }
  return policy === undefined && isTTY ? askOnTerminal : undefined;
}

/** Opens a URL with $BROWSER (the usual convention), else the system's opener. */
export function openUrl(url: string, env: NodeJS.ProcessEnv = process.env): void {
  const browser = env.BROWSER?.trim();
  const [cmd, ...args] = browser
    ? [...browser.split(/\s+/), url]
    : process.platform === 'darwin'
      ? ['open', url]
      : process.platform === 'win32'
        ? ['rundll32', 'url.dll,FileProtocolHandler', url]
        : ['xdg-open', url];
  try {
    const child = spawn(cmd!, args, { stdio: 'ignore', env });
    child.on('error', () => undefined);
    child.unref();
  } catch {
    // The URL is printed too: the user can open it by hand.
  }
}

export function cliAuthorize(
  policy: Policy,
  isTTY: boolean,
): ((request: McpAuthorizationRequest, signal?: AbortSignal) => Promise<boolean>) | undefined {
  const open = (request: McpAuthorizationRequest) => {
    process.stderr.write(
      `keel: signing in to MCP server "${request.server}" (${request.url}); if no browser opens, visit:\n  ${request.authorizationUrl}\n`,
    );
    openUrl(request.authorizationUrl);
    return true;
  };
  if (policy === 'all') return async (request) => open(request);
  if (policy !== undefined || !isTTY) return undefined;
  return async (request, signal) => {
    const rl = readline.createInterface({ input: process.stdin, output: process.stderr });
    try {
      process.stderr.write(`\n? MCP server "${request.server}" (${request.url}) needs you to sign in.\n`);
      const a = await ask(rl, 'Open the sign-in page in your browser? [y/N]: ', signal);
      return a !== undefined && /^y(es)?$/i.test(a.trim()) ? open(request) : false;
    } finally {
      rl.close();
    }
  };
}

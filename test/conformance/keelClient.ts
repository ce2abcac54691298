import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { type ScriptedReply, startEmulator } from '../emulator/server.ts';

// The "client command" the MCP conformance suite runs for one client scenario: it appends the
// scenario server's URL to our argv and names the scenario in MCP_CONFORMANCE_SCENARIO. We drive Keel
// the way a user does — the built `keel run --mcp-config <file>` — with a scripted model (the
// Anthropic emulator) that calls the scenario server's tool through McpSearch/McpCall.
//
// The authorization step of the auth scenarios: the suite's authorization server redirects straight
// back to the redirect URI. Keel opens the authorization URL with $BROWSER (after consent: here
// `--approve all`), and our "browser" (browser.mjs) follows that redirect to Keel's loopback listener.

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const serverUrl = process.argv[process.argv.length - 1] ?? '';
const scenario = process.env.MCP_CONFORMANCE_SCENARIO ?? '';
const context = JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT ?? '{}') as Record<string, unknown>;

/** The tool each scenario's server offers (auth scenarios share `test-tool`). */
function toolCall(name: string): { tool: string; arguments: Record<string, unknown> } | undefined {
  if (name === 'initialize') return undefined;
  if (name === 'tools_call') return { tool: 'add_numbers', arguments: { a: 5, b: 3 } };
  if (name === 'sse-retry') return { tool: 'test_reconnection', arguments: {} };
  if (name.startsWith('elicitation')) return { tool: 'test_client_elicitation_defaults', arguments: {} };
  return { tool: 'test-tool', arguments: {} };
}

/**
 * The OAuth settings a scenario hands us, written as a user would: a pre-registered or machine client,
 * a client ID metadata document URL, a private key in a 0600 file of the user's, an IdP ID token in an
 * environment variable (`env` collects those).
 */
function oauthFor(
  ctx: Record<string, unknown>,
  dir: string,
  env: Record<string, string>,
): Record<string, unknown> | undefined {
  const out: Record<string, unknown> = {};
  if (typeof ctx.client_id === 'string') out.clientId = ctx.client_id;
  if (typeof ctx.client_secret === 'string') out.clientSecret = ctx.client_secret;
  if (scenario.startsWith('auth/client-credentials')) out.grant = 'client_credentials';
  // The suite's AS checks that the client_id is the metadata document URL it expects.
  if (scenario === 'auth/basic-cimd')
    out.clientIdMetadataUrl = 'https://conformance-test.local/client-metadata.json';
  if (typeof ctx.private_key_pem === 'string') {
    // In Keel's own folder (HOME is `dir`), which the command sandbox never shows; relative to the
    // config file that names it.
    fs.mkdirSync(path.join(dir, '.keel', 'keys'), { recursive: true, mode: 0o700 });
    fs.writeFileSync(path.join(dir, '.keel', 'keys', 'client.pem'), ctx.private_key_pem, { mode: 0o600 });
    out.privateKeyJwt = { keyFile: '.keel/keys/client.pem', alg: ctx.signing_algorithm ?? 'ES256' };
  }
  if (typeof ctx.idp_id_token === 'string') {
    env.KEEL_CONF_IDP_ID_TOKEN = ctx.idp_id_token;
    out.crossAppAccess = {
      idpTokenEndpoint: ctx.idp_token_endpoint,
      idpClientId: ctx.idp_client_id,
      // biome-ignore lint/suspicious/noTemplateCurlyInString: an mcp.json variable, not a template
      idToken: '${env:KEEL_CONF_IDP_ID_TOKEN}',
    };
  }
  return Object.keys(out).length > 0 ? out : undefined;
}

async function main(): Promise<number> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'keel-conf-'));
  const ws = path.join(dir, 'ws');
  fs.mkdirSync(ws);
  const extraEnv: Record<string, string> = {};
  const oauth = oauthFor(context, dir, extraEnv);
  const config = path.join(dir, 'mcp.json');
  fs.writeFileSync(
    config,
    JSON.stringify({ servers: { conf: { type: 'http', url: serverUrl, ...(oauth ? { oauth } : {}) } } }),
  );
  const call = toolCall(scenario);
  const use = (name: string, input: unknown): ScriptedReply => ({
    content: [{ type: 'tool_use', name, input }],
  });
  const replies: ScriptedReply[] = [
    use('McpSearch', { server: 'conf', query: call?.tool ?? 'anything' }),
    ...(call ? [use('McpCall', { server: 'conf', ...call })] : []),
    { content: [{ type: 'text', text: 'done' }] },
  ];
  const emu = await startEmulator({});
  emu.setScenario({ replies });
  try {
    const child = spawn(
      process.execPath,
      [
        path.join(repo, 'bin', 'keel.mjs'),
        'run',
        '--workspace',
        ws,
        '--mcp-config',
        config,
        '--approve',
        'all',
        '--sandbox',
        'off',
        'use the conf server',
      ],
      {
        env: {
          ...process.env,
          ...extraEnv,
          ANTHROPIC_API_KEY: 'test-key',
          ANTHROPIC_BASE_URL: emu.url,
          KEEL_RETRY_BASE_MS: '5',
          HOME: dir,
          KEEL_HOME: path.join(dir, '.keel'),
          BROWSER: `${process.execPath} ${path.join(repo, 'test', 'conformance', 'browser.mjs')}`,
        },
        // Keel's stderr (its notices and errors) into the scenario's folder: the suite does not show a
        // client's output, and a failing scenario's report quotes it (scripts/mcp-conformance.mjs).
        stdio: ['ignore', 'inherit', fs.openSync(path.join(process.cwd(), 'keel.stderr'), 'a')],
      },
    );
    return await new Promise<number>((resolve) => child.on('close', (code) => resolve(code ?? 1)));
  } finally {
    await emu.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`keelClient: ${String(error)}\n`);
    process.exit(1);
  },
);

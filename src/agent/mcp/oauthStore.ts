import { createHash, randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { z } from 'zod';
import { keelHome } from '../trust/paths.ts';

// Where the CLI keeps what an MCP server's sign-in produced: the OAuth client registration (client id,
// and a client secret when the authorization server issued one) and the tokens. One file per server
// URL under `<keelHome>/mcp-oauth/`, directory 0700 and file 0600.
//
// Why there: the command sandbox denies reading `<keelHome>` (safety/sandbox/settings.ts), so a
// sandboxed command — or a model prompt-injected into running one — cannot read a token; and it is
// outside every workspace, so a token never lands in a repository, a settings file or a session log.
// A repository cannot plant a file here either (it cannot write outside its checkout), so what is read
// back is what Keel itself wrote; it is still validated (zod) because a hand-edited file must not crash
// a run.

const tokensSchema = z
  .object({
    access_token: z.string(),
    token_type: z.string(),
    expires_in: z.number().optional(),
    refresh_token: z.string().optional(),
    scope: z.string().optional(),
    id_token: z.string().optional(),
  })
  .loose();

const clientSchema = z
  .object({
    client_id: z.string(),
    client_secret: z.string().optional(),
  })
  .loose();

const entrySchema = z.object({
  url: z.string(),
  server: z.string(),
  client: clientSchema.optional(),
  tokens: tokensSchema.optional(),
  /** When the tokens were saved (ms): with expires_in, when the access token is stale. */
  savedAt: z.number().optional(),
  /** The loopback port the client was registered with: reused so the registration stays valid. */
  redirectPort: z.number().int().positive().optional(),
});

export type OAuthEntry = z.infer<typeof entrySchema>;
export type StoredTokens = z.infer<typeof tokensSchema>;
export type StoredClient = z.infer<typeof clientSchema>;

/** A stored entry as text (a file, a secret), validated; undefined when absent, broken or for another URL. */
export function parseOAuthEntry(text: string | undefined, url: string): OAuthEntry | undefined {
  if (text === undefined) return undefined;
  try {
    const parsed = entrySchema.safeParse(JSON.parse(text));
    // A file for another URL (a hash collision, a copied file) is not ours to use.
    return parsed.success && parsed.data.url === url ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

/** The key of a server URL's entry (file name, secret name): its tokens are for that resource. */
export function oauthKeyFor(url: string): string {
  return createHash('sha256').update(url).digest('hex').slice(0, 32);
}

export interface OAuthStore {
  readonly file: string;
  read(): OAuthEntry | undefined;
  update(change: (entry: OAuthEntry) => OAuthEntry): void;
  /** Sign out: the file is removed. */
  clear(): void;
}

/** `<keelHome>/mcp-oauth/`: Keel's own, unreadable from the sandbox. */
export function oauthDir(env: NodeJS.ProcessEnv = process.env): string {
  return path.join(keelHome(env), 'mcp-oauth');
}

/** Keyed by the server URL (the tokens are for that resource), not by the config's server name. */
export function oauthFileFor(url: string, env: NodeJS.ProcessEnv = process.env): string {
  return path.join(oauthDir(env), `${oauthKeyFor(url)}.json`);
}

export function createOAuthStore(
  server: string,
  url: string,
  env: NodeJS.ProcessEnv = process.env,
): OAuthStore {
  const file = oauthFileFor(url, env);
  const read = (): OAuthEntry | undefined => {
    let text: string;
    try {
      text = fs.readFileSync(file, 'utf8');
    } catch {
      return undefined;
    }
    return parseOAuthEntry(text, url);
  };
  const write = (entry: OAuthEntry) => {
    const dir = path.dirname(file);
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    fs.chmodSync(dir, 0o700);
    // Written to a private temporary file and renamed: a reader never sees half a file, and the
    // secret never exists with wider permissions than 0600, not even for a moment.
    const tmp = `${file}.${randomBytes(6).toString('hex')}.tmp`;
    fs.writeFileSync(tmp, `${JSON.stringify(entry, null, 2)}\n`, { mode: 0o600, flag: 'wx' });
    fs.renameSync(tmp, file);
  };
  return {
    file,
    read,
    update(change) {
      write(change(read() ?? { url, server }));
    },
    clear() {
      fs.rmSync(file, { force: true });
    },
  };
}

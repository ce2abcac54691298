import * as fs from 'node:fs';
import * as path from 'node:path';
import type { SandboxDenial } from '../../host.ts';

// What the sandbox refused, read from what the command printed. The kernel only says "Read-only file
// system", "Operation not permitted", "Connection refused" or "No such file"; Keel knows the
// boundary, so it can name what was refused: a write outside the writable roots, a read of a path
// on the deny list (hidden, so it looks missing), a Unix socket, a network address.

export interface ExplainInput {
  readonly stdout: string;
  readonly stderr: string;
  readonly command: string;
  readonly cwd: string;
  /** The command ran with the network (no network denials then). */
  readonly network?: boolean;
  readonly denyRead: readonly string[];
}

const MAX_DENIALS = 5;

function inside(parent: string, child: string): boolean {
  const rel = path.relative(parent, child);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
}

/** Path-like strings in a line: the one an error names first, then quoted ones, then bare ones. */
function pathsIn(line: string, cwd: string, home: string | undefined): string[] {
  const found: string[] = [];
  for (const m of line.matchAll(
    /([^\s:'"`]+): (?:read-only file system|no such file|permission denied|operation not permitted|device or resource busy)/gi,
  ))
    if (m[1]) found.push(m[1]);
  for (const m of line.matchAll(/['"`‘’]([^'"`‘’\n]+)['"`‘’]/g)) if (m[1]) found.push(m[1]);
  for (const m of line.matchAll(/(?:^|[\s:,(='"])((?:~|\.{0,2})?\/[^\s'"`:,()]+)/g))
    if (m[1]) found.push(m[1]);
  return found
    .filter((p) => /^[~./]|^[\w.-]+\//.test(p) && !/^\.+$/.test(p))
    .map((p) => (p.startsWith('~/') && home ? path.join(home, p.slice(2)) : path.resolve(cwd, p)));
}

const WRITE_REFUSED = /read-only file system|\bEROFS\b|device or resource busy|\bEBUSY\b/i;
const MISSING = /no such file or directory|\bENOENT\b|permission denied|\bEACCES\b/i;
const NOT_PERMITTED = /operation not permitted|\bEPERM\b|permission denied|\bEACCES\b/i;
const SOCKET_HINT = /AF_UNIX|\bunix\b|\.sock\b|socket/i;
const NET_REFUSED =
  /connection refused|ECONNREFUSED|failed to connect|couldn'?t connect|network is unreachable|ENETUNREACH|could not resolve|temporary failure in name resolution|name or service not known|\bENOTFOUND\b|\bEAI_AGAIN\b|getaddrinfo/i;
const ADDRESS =
  /\b(?:(?:https?|wss?|tcp):\/\/)?(localhost|\d{1,3}(?:\.\d{1,3}){3}|\[[0-9a-f:]+\]|::1|[a-z0-9-]+(?:\.[a-z0-9-]+)+)(?::|\s+port\s+|",\s*|',\s*|,\s*)(\d{1,5})\b/i;
const HOST_ONLY = /(?:resolve host:?|ENOTFOUND|EAI_AGAIN|getaddrinfo \w+)\s+['"]?([a-z0-9.-]+\.[a-z]{2,})/i;

const MAX_SCRIPT_BYTES = 64 * 1024;

/** The command text and the scripts it names (`python3 x.py`): where a traceback's target is written. */
function sourceTexts(command: string, cwd: string): string {
  const texts = [command];
  for (const word of command.split(/[\s;&|()<>'"]+/)) {
    if (!/\.(py|js|mjs|cjs|ts|sh|rb|pl|php)$/.test(word)) continue;
    try {
      const file = path.resolve(cwd, word);
      if (fs.statSync(file).size <= MAX_SCRIPT_BYTES) texts.push(fs.readFileSync(file, 'utf8'));
    } catch {
      // Not a file here.
    }
  }
  return texts.join('\n');
}

export function explainOutput(input: ExplainInput): SandboxDenial[] {
  let sources: string | undefined;
  const source = () => {
    sources ??= sourceTexts(input.command, input.cwd);
    return sources;
  };
  const home = process.env.HOME;
  const denials: SandboxDenial[] = [];
  const seen = new Set<string>();
  const add = (d: SandboxDenial) => {
    const key = `${d.kind}:${d.target}`;
    if (seen.has(key) || denials.length >= MAX_DENIALS) return;
    seen.add(key);
    denials.push(d);
  };
  const denied = (p: string) => input.denyRead.find((d) => inside(d, p));
  const lines = `${input.stderr}\n${input.stdout}`.split('\n');
  lines.forEach((line, index) => {
    if (WRITE_REFUSED.test(line)) {
      const target = pathsIn(line, input.cwd, home)[0];
      add({ kind: 'write', target: target ?? '', detail: 'outside the writable area, or a protected path' });
    }
    if (MISSING.test(line)) {
      for (const p of pathsIn(line, input.cwd, home)) {
        const rule = denied(p);
        if (rule) add({ kind: 'read', target: p, detail: `hidden by the secrets deny list (${rule})` });
      }
    }
    if (NOT_PERMITTED.test(line)) {
      // A traceback names the socket call a line or two above the error.
      const context = [line, lines[index - 1] ?? '', lines[index - 2] ?? ''].join('\n');
      if (SOCKET_HINT.test(context) || /connect EPERM/.test(line)) {
        const isSocket = (p: string) => /\.sock$|^\/(var\/)?run\//.test(p);
        const sock =
          pathsIn(context, input.cwd, home).find(isSocket) ??
          source()
            .split('\n')
            .flatMap((l) => pathsIn(l, input.cwd, home))
            .find(isSocket);
        add({ kind: 'socket', target: sock ?? '', detail: 'creating Unix-domain sockets is blocked' });
      }
    }
    if (!input.network && NET_REFUSED.test(line)) {
      const context = [line, lines[index - 1] ?? '', lines[index - 2] ?? ''].join('\n');
      // A traceback names the address in a source line further up; else the command may.
      const address = ADDRESS.exec(context) ?? ADDRESS.exec(lines.join('\n')) ?? ADDRESS.exec(source());
      const host = HOST_ONLY.exec(context);
      const target = address ? `${address[1]}:${address[2]}` : (host?.[1] ?? '');
      add({ kind: 'network', target, detail: 'the network is off inside the sandbox (loopback included)' });
    }
  });
  // Secrets bound to /dev/null read as empty: name them when the command mentions one.
  for (const word of input.command.split(/[\s'"=<>|;&()\\]+/)) {
    if (!/^[~/]/.test(word)) continue;
    const p = word.startsWith('~/') && home ? path.join(home, word.slice(2)) : path.resolve(input.cwd, word);
    const rule = denied(p);
    if (rule) add({ kind: 'read', target: p, detail: `hidden by the secrets deny list (${rule})` });
  }
  // An unnamed refusal adds nothing next to a named one of the same kind.
  return denials.filter((d) => d.target !== '' || !denials.some((o) => o.kind === d.kind && o.target !== ''));
}

const BOUNDARY =
  "Boundary: writes only in the workspace and $TMPDIR, except what host tools act on later (git hooks and config, .vscode/, .npmrc, .yarnrc*, .cargo/config, .keel/…: read-only, and new ones are removed after the command — change them with the edit tools, which ask the user); secrets on the deny list and Keel's ~/.keel unreadable; no direct network (loopback included; HTTP(S) only through Keel's domain proxy, when on); no Unix sockets.";

/** The short structured block the model reads. */
export function renderDenials(denials: readonly SandboxDenial[]): string {
  const lines = denials.map((d) => {
    const what = d.target ? `${d.kind} ${d.target}` : d.kind;
    return `- refused: ${what}${d.detail ? ` (${d.detail})` : ''}`;
  });
  return ['<sandbox-denied>', ...lines, BOUNDARY, '</sandbox-denied>'].join('\n');
}

export const SANDBOX_SUGGESTION =
  'Keep the work inside the workspace (or $TMPDIR) and use the dedicated tools. Only if the task truly needs this: call Bash again with the same command and "outside_sandbox": true — the user is asked in plain words and may refuse.';

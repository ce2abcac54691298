import { spawnSync } from 'node:child_process';
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { AgentEvent } from '../events.ts';

// What a judge grader reads besides its rubric: the trial's transcript, condensed, and the change the
// agent made, as a unified diff of the fixture against the trial's copy. Both come from the agent
// under test, so both are untrusted (judge.ts wraps them). The diff never runs git inside the trial's
// copy: its `.git/config` and `.gitattributes` are the agent's to write (core.fsmonitor, clean filters
// and textconv drivers run programs), and this runs in the `keel eval` process that holds the API key.

const SKIP = new Set(['.git', '.keel', 'node_modules']);
const MAX_FILES = 60;
const MAX_FILE_DIFF = 8_000;
const MAX_DIFF = 40_000;
const MAX_TRANSCRIPT = 30_000;

const clip = (s: string, n: number) => (s.length > n ? `${s.slice(0, n)}… [${s.length - n} more chars]` : s);

/** Head and tail kept: how a run starts and how it ends are what a judge needs most. */
function headTail(s: string, n: number): string {
  if (s.length <= n) return s;
  const half = Math.floor(n / 2);
  return `${s.slice(0, half)}\n… [${s.length - n} chars of the transcript left out] …\n${s.slice(-half)}`;
}

function oneLine(value: unknown, n: number): string {
  let s: string;
  try {
    s = typeof value === 'string' ? value : JSON.stringify(value);
  } catch {
    s = String(value);
  }
  return clip((s ?? '').replace(/\s+/g, ' ').trim(), n);
}

/** The run as a judge reads it: messages, tool calls with their inputs, outcomes, the end. */
export function condenseTranscript(events: readonly AgentEvent[]): string {
  const lines: string[] = [];
  for (const e of events) {
    if (e.type === 'user_message') lines.push(`USER: ${clip(e.message.text, 2_000)}`);
    else if (e.type === 'message_end') {
      const text = e.message.content.flatMap((b) => (b.type === 'text' ? [b.text] : [])).join('\n');
      if (text.trim()) lines.push(`ASSISTANT: ${clip(text.trim(), 2_000)}`);
    } else if (e.type === 'tool_start') lines.push(`TOOL CALL ${e.name} ${oneLine(e.input, 400)}`);
    else if (e.type === 'tool_end') {
      const code = e.result.error ? ` ${e.result.error.code}` : '';
      lines.push(`TOOL RESULT ${e.name} ${e.result.status}${code}: ${oneLine(e.result.text, 400)}`);
    } else if (e.type === 'agent_end') lines.push(`RUN ENDED: ${e.status}`);
    else if (e.type === 'error') lines.push(`ERROR ${e.code}: ${oneLine(e.message, 400)}`);
  }
  return headTail(lines.join('\n'), MAX_TRANSCRIPT);
}

type Entry = { kind: 'file'; abs: string } | { kind: 'link'; target: string };

/** Files by relative path, links not followed (a link's target is its content). */
function tree(root: string): Map<string, Entry> {
  const out = new Map<string, Entry>();
  const walk = (dir: string, rel: string) => {
    let names: fs.Dirent[];
    try {
      names = fs.readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const d of names.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
      if (rel === '' && SKIP.has(d.name)) continue;
      const abs = path.join(dir, d.name);
      const r = rel ? `${rel}/${d.name}` : d.name;
      if (d.isSymbolicLink()) out.set(r, { kind: 'link', target: fs.readlinkSync(abs) });
      else if (d.isDirectory()) walk(abs, r);
      else if (d.isFile()) out.set(r, { kind: 'file', abs });
    }
  };
  walk(root, '');
  return out;
}

const MAX_FILE_BYTES = 1024 * 1024;

/** A file's bytes; a large one (a build output, a log) stands in as its size and hash. */
function bytes(e: Entry | undefined): Buffer | undefined {
  if (!e) return undefined;
  if (e.kind === 'link') return Buffer.from(`symlink -> ${e.target}\n`);
  const size = fs.statSync(e.abs).size;
  if (size <= MAX_FILE_BYTES) return fs.readFileSync(e.abs);
  const hash = crypto.createHash('sha256');
  const fd = fs.openSync(e.abs, 'r');
  try {
    const chunk = Buffer.alloc(1024 * 1024);
    for (let n = fs.readSync(fd, chunk); n > 0; n = fs.readSync(fd, chunk)) hash.update(chunk.subarray(0, n));
  } finally {
    fs.closeSync(fd);
  }
  return Buffer.from(`(a file of ${size} bytes, sha256 ${hash.digest('hex')}; too large to show)\n`);
}

const isBinary = (b: Buffer) => b.subarray(0, 8_000).includes(0);

/**
 * One file's hunks from `git diff --no-index` on two scratch copies, in a scratch folder, with no
 * repository, system or global configuration (nothing the agent wrote can configure it).
 */
function fileDiff(scratch: string, before: Buffer | undefined, after: Buffer | undefined): string {
  const a = path.join(scratch, 'a');
  const b = path.join(scratch, 'b');
  fs.writeFileSync(a, before ?? '');
  fs.writeFileSync(b, after ?? '');
  const r = spawnSync(
    'git',
    ['diff', '--no-index', '--no-color', '--no-ext-diff', '--no-textconv', '-U3', '--', a, b],
    {
      cwd: scratch,
      encoding: 'utf8',
      maxBuffer: 16 * 1024 * 1024,
      env: {
        PATH: process.env.PATH ?? '/usr/bin:/bin',
        HOME: scratch,
        GIT_CONFIG_NOSYSTEM: '1',
        GIT_CONFIG_GLOBAL: os.devNull,
        GIT_CEILING_DIRECTORIES: path.dirname(scratch),
        LC_ALL: 'C',
      },
    },
  );
  if (r.error) return `(no diff: ${r.error.message})`;
  const hunks = r.stdout.indexOf('\n@@');
  return hunks >= 0 ? r.stdout.slice(hunks + 1) : '';
}

/** The agent's change: every added, removed or changed file of the trial's copy, as a unified diff. */
export function workspaceDiff(fixtureDir: string, workspace: string): string {
  const before = tree(fixtureDir);
  const after = tree(workspace);
  const paths = [...new Set([...before.keys(), ...after.keys()])].sort();
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'keel-judge-diff-'));
  const parts: string[] = [];
  let changed = 0;
  try {
    for (const rel of paths) {
      const x = bytes(before.get(rel));
      const y = bytes(after.get(rel));
      if (x && y && x.equals(y)) continue;
      changed++;
      if (changed > MAX_FILES) continue;
      const head = `--- ${x ? `a/${rel}` : '/dev/null'}\n+++ ${y ? `b/${rel}` : '/dev/null'}\n`;
      if ((x && isBinary(x)) || (y && isBinary(y))) {
        parts.push(`${head}(binary file ${!x ? 'added' : !y ? 'removed' : 'changed'})\n`);
        continue;
      }
      parts.push(head + clip(fileDiff(scratch, x, y), MAX_FILE_DIFF));
    }
  } finally {
    fs.rmSync(scratch, { recursive: true, force: true });
  }
  if (changed === 0) return '(no changes: the trial left the fixture as it was)';
  const more = changed > MAX_FILES ? `\n… and ${changed - MAX_FILES} more changed file(s) not shown` : '';
  return clip(parts.join(''), MAX_DIFF) + more;
}

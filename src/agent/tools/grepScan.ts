import type { Dirent } from 'node:fs';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Readable } from 'node:stream';
import { Worker } from 'node:worker_threads';
import type { RgFile, RgRun } from './fs/ripgrep.ts';
import { createIgnoreMatcher } from './fs/gitignore.ts';

// Grep without ripgrep (seed 001 ch.3: degrade, don't fail): the VS Code package ships no rg, a
// sandbox or a broken install may keep it from starting. A plain scan answers instead — fast-glob
// walks the tree (gitignore honoured, links never followed, `.git` skipped, like rg), a worker
// thread matches a JavaScript RegExp line by line. Same RgRun shape, so Grep renders it as usual.
// Threat: the pattern comes from the model (steerable by what it read) and the files from the
// repository: a catastrophic regex on a crafted line would hang a matcher forever. Matching runs in
// a worker the timeout terminates; the walk, the file count and each file's size are bounded, and
// links are never followed, so a scan cannot leave the search path.

/** Bounds of the plain scan: it is the fallback, not a second ripgrep. */
export const SCAN_MAX_FILES = 50_000;
export const SCAN_MAX_FILE_BYTES = 8 * 1024 * 1024;
const BINARY_PROBE_BYTES = 8192;

export interface ScanOptions {
  /** Absolute, canonical file or directory to search. */
  readonly target: string;
  readonly isFile: boolean;
  /** Workspace root the target is in (its .gitignore files apply). */
  readonly root: string;
  readonly pattern: string;
  readonly glob?: string | undefined;
  readonly caseInsensitive: boolean;
  readonly multiline: boolean;
  readonly mode: 'files_with_matches' | 'content' | 'count';
  readonly context: number;
  readonly noIgnore: boolean;
  readonly signal: AbortSignal;
  readonly timeoutMs: number;
  readonly maxLines: number;
  readonly maxLineBytes: number;
}

async function listFiles(o: ScanOptions, deadline: number): Promise<{ files: string[]; cut: boolean }> {
  if (o.isFile) return { files: [o.target], cut: false };
  const { default: fg } = await import('fast-glob');
  const picomatch = (await import('picomatch')).default;
  const cwdRel = path.relative(o.root, o.target).split(path.sep).join('/');
  const matcher = o.noIgnore ? undefined : createIgnoreMatcher(o.root);
  // rg's --glob: without a slash it matches the name at any depth; "!" excludes.
  const negate = o.glob?.startsWith('!') ?? false;
  const glob = negate ? o.glob!.slice(1) : o.glob;
  const pick = glob ? picomatch(glob, { dot: true, basename: !glob.includes('/') }) : undefined;
  const stream = fg.stream('**/*', {
    cwd: o.target,
    dot: true,
    onlyFiles: true,
    followSymbolicLinks: false,
    suppressErrors: true,
    objectMode: true,
    ignore: matcher ? ['**/.git/**', ...matcher.pruneGlobs(cwdRel)] : ['**/.git/**'],
  }) as unknown as Readable;
  const files: string[] = [];
  let cut = false;
  try {
    for await (const raw of stream) {
      const entry = raw as { path: string; dirent: Dirent };
      if (o.signal.aborted || Date.now() > deadline) break;
      if (!entry.dirent.isFile()) continue; // a link is not followed (rg without --follow)
      if (pick && pick(entry.path) === negate) continue;
      if (matcher?.isIgnored(cwdRel === '' ? entry.path : `${cwdRel}/${entry.path}`, false)) continue;
      files.push(path.join(o.target, entry.path));
      if (files.length >= SCAN_MAX_FILES) {
        cut = true;
        break;
      }
    }
  } finally {
    stream.destroy();
  }
  return { files: files.sort(), cut };
}

// The matcher, as the worker's source (eval: no separate file to bundle). It posts one message per
// file with matches, so what was found survives a timeout.
const WORKER_SOURCE = `(() => {
const { parentPort, workerData: o } = require('node:worker_threads');
const fs = require('node:fs');
let re;
const flags = (o.caseInsensitive ? 'i' : '') + (o.multiline ? 'gms' : '');
try { re = new RegExp(o.pattern, flags + 'u'); } catch {
  try { re = new RegExp(o.pattern, flags); } catch (e) { parentPort.postMessage({ error: String(e.message) }); return; }
}
let total = 0;
const clip = (t) => (Buffer.byteLength(t) > o.maxLineBytes ? { text: t.slice(0, o.maxLineBytes), cut: true } : { text: t });
for (const file of o.files) {
  let buf;
  try {
    const st = fs.statSync(file);
    if (!st.isFile() || st.size > o.maxFileBytes) continue;
    buf = fs.readFileSync(file);
  } catch { continue; }
  if (buf.subarray(0, o.binaryProbe).includes(0)) continue;
  const lines = buf.toString('utf8').split('\\n');
  if (lines.length > 0 && lines[lines.length - 1] === '') lines.pop();
  const hit = new Set();
  if (o.multiline) {
    const text = lines.join('\\n');
    const starts = [0];
    for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) === 10) starts.push(i + 1);
    const lineAt = (off) => { let lo = 0, hi = starts.length - 1; while (lo < hi) { const mid = (lo + hi + 1) >> 1; if (starts[mid] <= off) lo = mid; else hi = mid - 1; } return lo; };
    re.lastIndex = 0;
    for (let m = re.exec(text); m; m = re.exec(text)) {
      const a = lineAt(m.index), b = lineAt(m.index + Math.max(0, m[0].length - 1));
      for (let l = a; l <= b; l++) hit.add(l);
      if (m[0].length === 0) re.lastIndex++;
      if (o.mode === 'files_with_matches') break;
    }
  } else {
    for (let i = 0; i < lines.length; i++) {
      if (re.test(lines[i].replace(/\\r$/, ''))) { hit.add(i); if (o.mode === 'files_with_matches') break; }
    }
  }
  if (hit.size === 0) continue;
  const out = [];
  if (o.mode === 'content') {
    const shown = new Set();
    for (const i of [...hit].sort((x, y) => x - y))
      for (let j = Math.max(0, i - o.context); j <= Math.min(lines.length - 1, i + o.context); j++) shown.add(j);
    for (const j of [...shown].sort((x, y) => x - y)) {
      out.push({ line: j + 1, match: hit.has(j), ...clip(lines[j].replace(/\\r$/, '')) });
      if (++total >= o.maxLines) break;
    }
  }
  parentPort.postMessage({ file, matched: hit.size, lines: out });
  if (total >= o.maxLines) { parentPort.postMessage({ limit: true }); break; }
}
parentPort.postMessage({ done: true });
})();
`;

type WorkerMessage =
  | { error: string }
  | { file: string; matched: number; lines: RgFile['lines'] }
  | { limit: true }
  | { done: true };

export async function scanGrep(o: ScanOptions): Promise<RgRun> {
  const deadline = Date.now() + o.timeoutMs;
  const listed = await listFiles(o, deadline);
  const files = new Map<string, RgFile>();
  if (o.signal.aborted) return { files, exitCode: null, stderr: '', stoppedBy: 'abort' };
  return new Promise<RgRun>((resolve) => {
    const worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: {
        files: listed.files,
        pattern: o.pattern,
        caseInsensitive: o.caseInsensitive,
        multiline: o.multiline,
        mode: o.mode,
        context: o.context,
        maxLines: o.maxLines,
        maxLineBytes: o.maxLineBytes,
        maxFileBytes: SCAN_MAX_FILE_BYTES,
        binaryProbe: BINARY_PROBE_BYTES,
      },
      // Not the host's environment: the matcher needs none of it.
      env: {},
      resourceLimits: { maxOldGenerationSizeMb: 512 },
    });
    let settled = false;
    const finish = (run: Omit<RgRun, 'files'>) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      o.signal.removeEventListener('abort', onAbort);
      void worker.terminate();
      resolve({ files, ...run });
    };
    const timer = setTimeout(
      () => finish({ exitCode: null, stderr: '', stoppedBy: 'timeout' }),
      Math.max(0, deadline - Date.now()),
    );
    const onAbort = () => finish({ exitCode: null, stderr: '', stoppedBy: 'abort' });
    o.signal.addEventListener('abort', onAbort, { once: true });
    worker.on('message', (m: WorkerMessage) => {
      if ('error' in m) finish({ exitCode: 2, stderr: `regex parse error: ${m.error}` });
      else if ('file' in m) files.set(m.file, { path: m.file, lines: m.lines, matchedLines: m.matched });
      else if ('limit' in m) finish({ exitCode: 0, stderr: '', stoppedBy: 'limit' });
      else
        finish({
          exitCode: files.size > 0 ? 0 : 1,
          stderr: '',
          ...(listed.cut ? { stoppedBy: 'limit' as const } : {}),
        });
    });
    worker.on('error', (e) => finish({ exitCode: null, stderr: '', spawnError: e.message }));
    worker.on('exit', () => finish({ exitCode: files.size > 0 ? 0 : 1, stderr: '' }));
  });
}

/** Newest first by mtime; `items` come sorted by name, and the sort is stable, so ties keep that order. */
export function byMtimeNewestFirst<T>(items: T[], absOf: (t: T) => string): T[] {
  const mtime = new Map<T, number>();
  for (const t of items) {
    try {
      mtime.set(t, fs.statSync(absOf(t)).mtimeMs);
    } catch {
      mtime.set(t, 0);
    }
  }
  return items.sort((a, b) => mtime.get(b)! - mtime.get(a)!);
}

import { spawn } from 'node:child_process';
import * as fs from 'node:fs';

// Runs ripgrep with --json and folds its event stream into per-file records. Kept apart from the
// Grep tool so the benchmark and tests can see exactly what runs.

const NEWLINE = 0x0a;

export interface RgLine {
  readonly line: number;
  readonly text: string;
  readonly match: boolean;
  /** `text` is only the start of a much longer line (see RgOptions.maxLineBytes). */
  readonly cut?: boolean;
}

export interface RgFile {
  /** Path exactly as ripgrep printed it (the search path prefix + relative part). */
  readonly path: string;
  readonly lines: RgLine[];
  matchedLines: number;
}

export interface RgRun {
  readonly files: Map<string, RgFile>;
  readonly exitCode: number | null;
  readonly stderr: string;
  /** We stopped ripgrep ourselves: too much output, timeout or abort. */
  readonly stoppedBy?: 'limit' | 'timeout' | 'abort';
  /** ripgrep could not be started at all. */
  readonly spawnError?: string;
}

export interface RgOptions {
  readonly rgPath: string;
  readonly args: readonly string[];
  readonly cwd: string;
  readonly signal: AbortSignal;
  readonly timeoutMs: number;
  /** Keep match/context lines (content mode); otherwise only per-file counts are parsed. */
  readonly collectLines: boolean;
  /** Stop once this many lines have been collected across all files. */
  readonly maxLines: number;
  /**
   * Keep about this many bytes of a long line (minified code), and read line events without a
   * full JSON.parse. Leave undefined for multiline searches, whose events span several lines.
   */
  readonly maxLineBytes?: number;
}

interface RgText {
  readonly text?: string;
  readonly bytes?: string;
}

interface RgEvent {
  readonly type: string;
  readonly data: {
    readonly path?: RgText;
    readonly lines?: RgText;
    readonly line_number?: number | null;
    readonly stats?: { readonly matched_lines?: number };
  };
}

function textOf(t: RgText | undefined): string {
  if (!t) return '';
  if (t.text !== undefined) return t.text;
  // Not valid UTF-8: ripgrep sends base64; show it lossily rather than not at all.
  return t.bytes !== undefined ? Buffer.from(t.bytes, 'base64').toString('utf8') : '';
}

const END = Buffer.from('{"type":"end"');
const MATCH = Buffer.from('{"type":"match"');
const CONTEXT = Buffer.from('{"type":"context"');
const LINES_KEY = Buffer.from('"lines":{"');
const LINE_NUMBER_KEY = Buffer.from('"},"line_number":');

function startsWith(buf: Buffer, prefix: Buffer): boolean {
  return buf.length >= prefix.length && prefix.compare(buf, 0, prefix.length) === 0;
}

interface LineEvent {
  readonly path: string;
  readonly lineNumber: number;
  readonly text: string;
  readonly cut: boolean;
}

/**
 * Read a match/context event without JSON.parse on the whole of it: that would build the
 * submatches array (one object per hit) and decode lines of minified code that can be megabytes,
 * only for us to show the first few hundred characters. ripgrep writes the keys in a fixed order
 * (path, lines, line_number, ...), and `"},"line_number":` cannot occur inside a JSON string (its
 * quote would be escaped), so its first occurrence ends the line text. `pathCache` remembers the
 * last event's path prefix: consecutive events almost always come from the same file.
 */
function parseLineEvent(
  buf: Buffer,
  keep: number,
  pathCache: { head?: Buffer; path?: string },
): LineEvent | undefined {
  const linesAt = buf.indexOf(LINES_KEY);
  if (linesAt < 0) return undefined;
  const headBytes = buf.subarray(0, linesAt);
  let path = pathCache.path;
  if (path === undefined || !pathCache.head || !headBytes.equals(pathCache.head)) {
    const head = JSON.parse(`${buf.toString('utf8', 0, linesAt - 1)}}}`) as RgEvent;
    path = textOf(head.data.path);
    pathCache.head = Buffer.from(headBytes);
    pathCache.path = path;
  }
  const isBytes = buf[linesAt + LINES_KEY.length] === 0x62; // "b"ytes vs "t"ext
  const valueStart = linesAt + LINES_KEY.length + (isBytes ? 'bytes":"' : 'text":"').length;
  const valueEnd = buf.indexOf(LINE_NUMBER_KEY, valueStart);
  if (valueEnd < 0) return undefined;
  const numberAt = valueEnd + LINE_NUMBER_KEY.length;
  let lineNumber = 0;
  for (let i = numberAt; i < buf.length; i++) {
    const digit = buf[i]! - 0x30;
    if (digit < 0 || digit > 9) break;
    lineNumber = lineNumber * 10 + digit;
  }
  const cut = valueEnd - valueStart > keep;
  let text: string;
  if (isBytes) {
    const end = cut ? valueStart + keep - (keep % 4) : valueEnd;
    text = Buffer.from(buf.toString('latin1', valueStart, end), 'base64').toString('utf8');
  } else if (!cut) {
    text = JSON.parse(`"${buf.toString('utf8', valueStart, valueEnd)}"`) as string;
  } else {
    // The cut may split an escape sequence; drop characters until what is left is a valid string.
    let raw = buf.toString('utf8', valueStart, valueStart + keep);
    text = '';
    for (let attempt = 0; attempt < 8 && raw.length > 0; attempt++) {
      try {
        text = JSON.parse(`"${raw}"`) as string;
        break;
      } catch {
        raw = raw.slice(0, -1);
      }
    }
  }
  return { path, lineNumber, text, cut };
}

/** Address-space cap for ripgrep, in KiB (4 GiB): far above any real search. */
const RG_MEMORY_CAP_KIB = 4 * 1024 * 1024;
const SH = '/bin/sh';

/**
 * ripgrep reads every .gitignore it meets, following links: a repository that ships
 * `.gitignore -> /dev/zero` makes it allocate about a gigabyte a second until the machine runs out.
 * On POSIX it runs under `ulimit -v`, so such a search fails instead (the timeout bounds the rest).
 */
function withMemoryCap(rgPath: string, args: readonly string[]): [string, string[]] {
  // A missing binary is spawned directly so that it fails as a spawn error, not as a shell's 127.
  if (process.platform === 'win32' || !fs.existsSync(SH) || !fs.existsSync(rgPath))
    return [rgPath, [...args]];
  return [SH, ['-c', `ulimit -v ${RG_MEMORY_CAP_KIB} 2>/dev/null; exec "$0" "$@"`, rgPath, ...args]];
}

export function runRipgrep(options: RgOptions): Promise<RgRun> {
  return new Promise((resolve) => {
    const files = new Map<string, RgFile>();
    let collected = 0;
    let stoppedBy: RgRun['stoppedBy'];
    let stderr = '';
    let settled = false;

    const [command, argv] = withMemoryCap(options.rgPath, options.args);
    const child = spawn(command, argv, {
      cwd: options.cwd,
      stdio: ['ignore', 'pipe', 'pipe'],
      // A user's RIPGREP_CONFIG_PATH must not change what the tool returns.
      env: { ...process.env, RIPGREP_CONFIG_PATH: '' },
    });

    const stop = (reason: NonNullable<RgRun['stoppedBy']>) => {
      if (stoppedBy) return;
      stoppedBy = reason;
      child.kill('SIGKILL');
    };
    const onAbort = () => stop('abort');
    options.signal.addEventListener('abort', onAbort, { once: true });
    if (options.signal.aborted) stop('abort');
    const timer = setTimeout(() => stop('timeout'), options.timeoutMs);

    const fileFor = (data: RgEvent['data']): RgFile => {
      const p = textOf(data.path);
      let file = files.get(p);
      if (!file) {
        file = { path: p, lines: [], matchedLines: 0 };
        files.set(p, file);
      }
      return file;
    };

    const pathCache: { head?: Buffer; path?: string } = {};
    const handle = (line: Buffer) => {
      // Only parse what this mode needs: in files/count mode the per-match events are skipped
      // without even being decoded.
      if (startsWith(line, END)) {
        const event = JSON.parse(line.toString('utf8')) as RgEvent;
        const matched = event.data.stats?.matched_lines ?? 0;
        if (matched > 0) fileFor(event.data).matchedLines = matched;
        return;
      }
      if (!options.collectLines || stoppedBy) return;
      const isMatch = startsWith(line, MATCH);
      if (!isMatch && !startsWith(line, CONTEXT)) return;
      const keep = options.maxLineBytes;
      const fast = keep !== undefined ? parseLineEvent(line, keep, pathCache) : undefined;
      if (fast) {
        const file = files.get(fast.path) ?? fileFor({ path: { text: fast.path } });
        file.lines.push({
          line: fast.lineNumber,
          text: fast.text.replace(/\r?\n$/, '').replace(/\r$/, ''),
          match: isMatch,
          ...(fast.cut ? { cut: true } : {}),
        });
        if (isMatch && ++collected >= options.maxLines) stop('limit');
        return;
      }
      const event = JSON.parse(line.toString('utf8')) as RgEvent;
      const file = fileFor(event.data);
      const first = event.data.line_number ?? 0;
      // A multiline match spans several lines; number each one.
      const parts = textOf(event.data.lines)
        .replace(/\r?\n$/, '')
        .split('\n');
      for (let i = 0; i < parts.length; i++) {
        file.lines.push({ line: first + i, text: parts[i]!.replace(/\r$/, ''), match: isMatch });
      }
      if (isMatch) collected += parts.length;
      if (collected >= options.maxLines) stop('limit');
    };

    // Lines are cut out of raw chunks without copying when they fit in one chunk; a JSON line for a
    // match in a minified file can be megabytes and span many chunks, so nothing is rescanned.
    let partial: Buffer[] = [];
    child.stdout.on('data', (chunk: Buffer) => {
      let start = 0;
      let nl = chunk.indexOf(NEWLINE);
      while (nl >= 0) {
        let line: Buffer;
        if (partial.length > 0) {
          partial.push(chunk.subarray(start, nl));
          line = Buffer.concat(partial);
          partial = [];
        } else {
          line = chunk.subarray(start, nl);
        }
        if (line.length > 0) handle(line);
        start = nl + 1;
        nl = chunk.indexOf(NEWLINE, start);
      }
      if (start < chunk.length) partial.push(chunk.subarray(start));
    });
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk: string) => {
      if (stderr.length < 16_384) stderr += chunk;
    });

    const finish = (run: Omit<RgRun, 'files' | 'stderr'>) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      options.signal.removeEventListener('abort', onAbort);
      resolve({ files, stderr, ...run, ...(stoppedBy ? { stoppedBy } : {}) });
    };
    child.on('error', (error) => finish({ exitCode: null, spawnError: error.message }));
    child.on('close', (code) => {
      if (partial.length > 0 && !stoppedBy) handle(Buffer.concat(partial));
      finish({ exitCode: code });
    });
  });
}

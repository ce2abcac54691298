import { spawn } from 'node:child_process';

// Runs ripgrep with --json and folds its event stream into per-file records. Kept apart from the
// Grep tool so the benchmark and tests can see exactly what runs.

const NEWLINE = 0x0a;

export interface RgLine {
  readonly line: number;
  readonly text: string;
  readonly match: boolean;
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

export function runRipgrep(options: RgOptions): Promise<RgRun> {
  return new Promise((resolve) => {
    const files = new Map<string, RgFile>();
    let collected = 0;
    let stoppedBy: RgRun['stoppedBy'];
    let stderr = '';
    let settled = false;

    const child = spawn(options.rgPath, options.args, {
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

    const handle = (line: string) => {
      // Only parse what this mode needs: in files/count mode the per-match events are skipped.
      if (line.startsWith('{"type":"end"')) {
        const event = JSON.parse(line) as RgEvent;
        const matched = event.data.stats?.matched_lines ?? 0;
        if (matched > 0) fileFor(event.data).matchedLines = matched;
        return;
      }
      if (!options.collectLines || stoppedBy) return;
      const isMatch = line.startsWith('{"type":"match"');
      if (!isMatch && !line.startsWith('{"type":"context"')) return;
      const event = JSON.parse(line) as RgEvent;
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

    // Lines are cut out of raw chunks and decoded once: a JSON line for a match in a minified file
    // can be hundreds of KB and span many chunks, so nothing here may rescan what it has seen.
    let partial: Buffer[] = [];
    child.stdout.on('data', (chunk: Buffer) => {
      let start = 0;
      let nl = chunk.indexOf(NEWLINE);
      while (nl >= 0) {
        let line: string;
        if (partial.length > 0) {
          partial.push(chunk.subarray(start, nl));
          line = Buffer.concat(partial).toString('utf8');
          partial = [];
        } else {
          line = chunk.toString('utf8', start, nl);
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
      if (partial.length > 0 && !stoppedBy) handle(Buffer.concat(partial).toString('utf8'));
      finish({ exitCode: code });
    });
  });
}

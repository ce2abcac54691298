import * as fs from 'node:fs';
import * as path from 'node:path';
import type { ShellPort, WorkspacePort } from '../host.ts';
import { type ChangeDetector, createLiveScan, type LiveScan, type ScanChange } from './liveScan.ts';
import { DEFAULT_IGNORED_SIZE_CAP, type ScanEntry, sameSignature } from './scan.ts';
import { type CheckpointStore, type FileState, openCheckpointStore } from './store.ts';

// Per-prompt checkpoints. Keel's own writes go through the workspace port, so the recorder sees the
// exact prior bytes at write time. A command can touch anything, so around each command the recorder
// brings its workspace scan up to date (stat only; see liveScan.ts: after the first command only the
// paths the kernel reported are looked at again) and keeps a copy of every capturable file whose
// signature it has not seen yet: the first command of a session copies the tree once, later ones
// only what changed. A change is the command's only if the kernel stamped it (ctime) while it ran.

/** Files bigger than this get no pre-image copy (restore reports them instead of guessing). */
export const DEFAULT_CAPTURE_CAP = 8 * 1024 * 1024;

export interface CheckpointRecorderOptions {
  readonly stateDir: string;
  readonly sessionId: string;
  readonly root: string;
  /**
   * More workspace folders: their files are recorded by absolute path (a first-folder file by its
   * relative one), so restore writes them back only where the user's folders still include them.
   */
  readonly extraRoots?: readonly string[];
  readonly now: () => number;
  /** Prompts the session already ran (a resumed session continues the numbering). */
  readonly promptsSoFar?: number;
  readonly captureCap?: number;
  readonly ignoredSizeCap?: number;
  readonly log?: (level: 'warn', message: string) => void;
  /** How changes between two scans are found (default `watch`, falling back to `full` by itself). */
  readonly detector?: ChangeDetector;
}

export interface CheckpointRecorder {
  readonly store: CheckpointStore;
  /** The prompt whose run is recording now (1-based; 0 before the first prompt). */
  readonly currentPrompt: number;
  beginPrompt(text: string): number;
  wrapWorkspace(inner: WorkspacePort): WorkspacePort;
  wrapShell(inner: ShellPort): ShellPort;
  /** The shell background jobs run on: their writes are not checkpointed, but restore can say they ran. */
  wrapJobShell(inner: ShellPort): ShellPort;
  dispose(): void;
}

interface Known {
  readonly sig: ScanEntry;
  readonly hash: string;
}

export function createCheckpointRecorder(options: CheckpointRecorderOptions): CheckpointRecorder {
  const store = openCheckpointStore(options.stateDir, options.sessionId);
  const captureCap = options.captureCap ?? DEFAULT_CAPTURE_CAP;
  const root = options.root;
  let prompt = options.promptsSoFar ?? 0;
  // What the recorder has a copy of, by the stat signature it had when copied.
  const known = new Map<string, Known>();

  const extraRoots = options.extraRoots ?? [];
  const relIn = (base: string, abs: string): string | undefined => {
    const rel = path.relative(base, abs);
    if (rel === '' || rel.startsWith('..') || path.isAbsolute(rel)) return undefined;
    const posix = rel.split(path.sep).join('/');
    if (posix.split('/').includes('.git')) return undefined;
    return posix;
  };
  const relOf = (abs: string): string | undefined => {
    const stateRel = path.relative(options.stateDir, abs);
    if (!stateRel.startsWith('..') && !path.isAbsolute(stateRel)) return undefined;
    // The most specific folder: a second folder nested in the first records by its absolute path.
    const extra = extraRoots
      .filter((r) => relIn(r, abs) !== undefined)
      .sort((a, b) => b.length - a.length)[0];
    if (extra !== undefined) return path.normalize(abs);
    return relIn(root, abs);
  };
  /** Where a recorded path is on disk now (absolute records are a later folder's). */
  const absOf = (rel: string): string => (path.isAbsolute(rel) ? rel : path.join(root, rel));
  const warn = (message: string) => options.log?.('warn', `checkpoint: ${message}`);
  const record = (rel: string, by: string, before: FileState, after: FileState, command?: string) =>
    store.appendChange({
      prompt: Math.max(prompt, 1),
      path: rel,
      by,
      before,
      after,
      ts: options.now(),
      ...(command !== undefined ? { command } : {}),
    });
  const lstatEntry = (abs: string, inIgnoredDir = false): ScanEntry | undefined => {
    try {
      const s = fs.lstatSync(abs);
      if (!s.isFile()) return undefined;
      return {
        size: s.size,
        mtimeMs: s.mtimeMs,
        ino: s.ino,
        mode: s.mode & 0o7777,
        ctimeMs: s.ctimeMs,
        inIgnoredDir,
      };
    } catch {
      return undefined;
    }
  };

  /** Copies the file (if capturable) and remembers it under this signature. */
  const capture = (rel: string, entry: ScanEntry): FileState => {
    if (entry.inIgnoredDir)
      return {
        kind: 'untracked',
        size: entry.size,
        mtimeMs: entry.mtimeMs,
        reason: 'inside an ignored folder',
      };
    if (entry.size > captureCap)
      return {
        kind: 'untracked',
        size: entry.size,
        mtimeMs: entry.mtimeMs,
        reason: 'larger than the copy limit',
      };
    const seen = known.get(rel);
    if (seen && sameSignature(seen.sig, entry)) return { kind: 'bytes', hash: seen.hash, mode: entry.mode };
    try {
      const hash = store.putBlob(fs.readFileSync(absOf(rel)));
      known.set(rel, { sig: entry, hash });
      return { kind: 'bytes', hash, mode: entry.mode };
    } catch (error) {
      return {
        kind: 'untracked',
        size: entry.size,
        mtimeMs: entry.mtimeMs,
        reason: `unreadable (${String(error)})`,
      };
    }
  };

  /** The state of a path as the recorder last knew it, for the "before" side of a command's change. */
  const priorState = (rel: string, entry: ScanEntry): FileState => {
    const seen = known.get(rel);
    if (seen && sameSignature(seen.sig, entry)) return { kind: 'bytes', hash: seen.hash, mode: entry.mode };
    const reason = entry.inIgnoredDir
      ? 'inside an ignored folder'
      : entry.size > captureCap
        ? 'larger than the copy limit'
        : 'no copy was taken';
    return { kind: 'untracked', size: entry.size, mtimeMs: entry.mtimeMs, reason };
  };

  // One scan per folder; a later folder's changes carry absolute paths (as relOf records them).
  let live: { scan: LiveScan; base: string | undefined }[] | undefined;
  const scans = () => {
    live ??= [root, ...extraRoots].map((r, i) => ({
      scan: createLiveScan({
        root: r,
        skipDirs: [options.stateDir, ...extraRoots.filter((x) => x !== r)],
        ignoredSizeCap: options.ignoredSizeCap ?? DEFAULT_IGNORED_SIZE_CAP,
        fenceDir: path.join(store.dir, i === 0 ? 'fence' : `fence-${i}`),
        ...(options.detector ? { detector: options.detector } : {}),
        log: warn,
      }),
      base: i === 0 ? undefined : r,
    }));
    return live;
  };
  const liveScan = () => ({
    async refresh(): Promise<ScanChange[]> {
      const out: ScanChange[] = [];
      for (const { scan, base } of scans()) {
        for (const change of await scan.refresh())
          out.push(
            base === undefined ? change : { ...change, rel: path.join(base, ...change.rel.split('/')) },
          );
      }
      return out;
    },
  });

  // Kernel timestamps are coarse (a tick, ~4 ms): allow a little on both sides of the command's run.
  const CTIME_SLACK_MS = 20;
  const recordCommand = (command: string, changes: ScanChange[], startedAt: number, endedAt: number) => {
    // Stamped while the command ran: the command's. Otherwise someone else saved it between the two
    // scans (or the command left a background writer): not Keel's change, taken in as the baseline.
    const byCommand = (entry: ScanEntry) =>
      entry.ctimeMs >= startedAt - CTIME_SLACK_MS && entry.ctimeMs <= endedAt + CTIME_SLACK_MS;
    for (const { rel, before, after } of [...changes].sort((a, b) => (a.rel < b.rel ? -1 : 1))) {
      if (!before && after) {
        const next = capture(rel, after);
        if (byCommand(after)) record(rel, 'Bash', { kind: 'absent' }, next, command);
      } else if (before && after) {
        const prior = priorState(rel, before);
        const next = capture(rel, after);
        if (!byCommand(after)) continue; // someone else saved it before the command ran: their baseline now
        if (prior.kind === 'bytes' && next.kind === 'bytes' && prior.hash === next.hash) continue; // touched only
        record(rel, 'Bash', prior, next, command);
      } else if (before) {
        record(rel, 'Bash', priorState(rel, before), { kind: 'absent' }, command);
        known.delete(rel);
      }
    }
  };

  // The pre-image is read from the disk, never through the port: a host may treat a read as "what
  // the agent based its edit on" (VS Code's optimistic lock does), and this read is not the agent's.
  const readState = async (_inner: WorkspacePort, abs: string): Promise<FileState> => {
    let stat: fs.Stats;
    try {
      stat = await fs.promises.lstat(abs);
    } catch {
      return { kind: 'absent' };
    }
    if (!stat.isFile())
      return { kind: 'untracked', size: stat.size, mtimeMs: stat.mtimeMs, reason: 'not a file' };
    if (stat.size > captureCap)
      return {
        kind: 'untracked',
        size: stat.size,
        mtimeMs: stat.mtimeMs,
        reason: 'larger than the copy limit',
      };
    const bytes = await fs.promises.readFile(abs);
    return { kind: 'bytes', hash: store.putBlob(bytes), mode: stat.mode & 0o7777 };
  };
  const remember = (rel: string, abs: string, hash: string) => {
    const entry = lstatEntry(abs);
    if (entry) known.set(rel, { sig: entry, hash });
  };

  return {
    store,
    get currentPrompt() {
      return prompt;
    },
    beginPrompt(text) {
      prompt++;
      try {
        store.appendPrompt({ prompt, ts: options.now(), text: text.slice(0, 200) });
      } catch (error) {
        warn(`could not record prompt ${prompt}: ${String(error)}`);
      }
      return prompt;
    },
    wrapWorkspace(inner) {
      return {
        ...inner,
        roots: inner.roots,
        isTrusted: () => inner.isTrusted(),
        async writeFile(p, content, opts) {
          const rel = relOf(p);
          if (rel === undefined) return inner.writeFile(p, content, opts);
          const before = await readState(inner, p);
          await inner.writeFile(p, content, opts);
          const hash = store.putBlob(content);
          const mode = opts?.mode ?? (before.kind === 'bytes' ? before.mode : undefined);
          record(rel, 'tool', before, { kind: 'bytes', hash, ...(mode !== undefined ? { mode } : {}) });
          remember(rel, p, hash);
        },
        async deleteFile(p) {
          const rel = relOf(p);
          if (rel === undefined) return inner.deleteFile(p);
          const before = await readState(inner, p);
          await inner.deleteFile(p);
          record(rel, 'tool', before, { kind: 'absent' });
          known.delete(rel);
        },
        async rename(from, to) {
          const relFrom = relOf(from);
          const relTo = relOf(to);
          const beforeFrom = relFrom !== undefined ? await readState(inner, from) : undefined;
          const beforeTo = relTo !== undefined ? await readState(inner, to) : undefined;
          await inner.rename(from, to);
          if (relFrom !== undefined && beforeFrom) record(relFrom, 'tool', beforeFrom, { kind: 'absent' });
          if (relTo !== undefined && beforeTo) record(relTo, 'tool', beforeTo, await readState(inner, to));
          if (relFrom !== undefined) known.delete(relFrom);
        },
      };
    },
    wrapShell(inner) {
      return {
        // The OS sandbox (and anything else the host's shell carries) stays visible to the tools.
        get sandbox() {
          return inner.sandbox;
        },
        async run(runOptions) {
          let scanned = false;
          try {
            // What changed since the last command (the user, an editor, a job) is the baseline now.
            for (const { rel, after } of await liveScan().refresh()) if (after) capture(rel, after);
            scanned = true;
          } catch (error) {
            warn(`scan before the command failed; its changes are not recorded: ${String(error)}`);
          }
          const startedAt = Date.now();
          const result = await inner.run(runOptions);
          const endedAt = Date.now();
          if (scanned) {
            try {
              recordCommand(runOptions.command, await liveScan().refresh(), startedAt, endedAt);
            } catch (error) {
              warn(`scan after the command failed; its changes are not recorded: ${String(error)}`);
            }
          }
          return result;
        },
      };
    },
    wrapJobShell(inner) {
      return {
        get sandbox() {
          return inner.sandbox;
        },
        async run(runOptions) {
          const job = { prompt: Math.max(prompt, 1), command: runOptions.command.slice(0, 200) };
          try {
            store.appendJob({ ...job, event: 'start', ts: options.now() });
          } catch (error) {
            warn(`could not record a background job: ${String(error)}`);
          }
          try {
            return await inner.run(runOptions);
          } finally {
            try {
              store.appendJob({ ...job, event: 'end', ts: options.now() });
            } catch {
              // the start record already makes restore say the job ran
            }
          }
        },
      };
    },
    dispose() {
      for (const { scan } of live ?? []) scan.dispose();
    },
  };
}

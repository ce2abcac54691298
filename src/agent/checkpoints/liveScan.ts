import * as fs from 'node:fs';
import * as path from 'node:path';
import { createIgnoreMatcher, type IgnoreMatcher } from '../tools/fs/gitignore.ts';
import {
  entryOf,
  type Scan,
  type ScanEntry,
  type ScanOptions,
  sameSignature,
  scanWorkspace,
} from './scan.ts';

// The workspace scan kept up to date instead of redone: the first refresh walks the tree once, and
// every later refresh re-stats only the paths the kernel said changed since (one inotify watch per
// directory, Linux). A refresh first writes a fence file into a watched folder of Keel's own and waits
// for its event: inotify delivers one queue in order, so once the fence is seen every change made
// before the refresh began has been seen too. Where that cannot be trusted — no inotify, the watch
// limit reached, a fence that never arrives, a burst big enough to overflow the kernel's queue, a
// changed .gitignore — the refresh is a full scan, which is what every refresh cost before.

export interface ScanChange {
  readonly rel: string;
  /** The entry at the previous refresh; undefined: the path was not there. */
  readonly before: ScanEntry | undefined;
  /** The entry now; undefined: the path is gone. */
  readonly after: ScanEntry | undefined;
}

export type ChangeDetector = 'watch' | 'full';

export interface LiveScanOptions extends ScanOptions {
  /** A folder of Keel's own (outside the scanned tree) where the fence file is written. */
  readonly fenceDir: string;
  /** `full` scans everything on every refresh (the baseline; also the fallback). Default `watch`. */
  readonly detector?: ChangeDetector;
  readonly log?: (message: string) => void;
}

export interface LiveScan {
  /** Brings the scan up to date and returns what changed since the previous refresh (all entries the first time). */
  refresh(): Promise<ScanChange[]>;
  /** The entry of a path at the last refresh. */
  entry(rel: string): ScanEntry | undefined;
  /** How the last refresh found its changes. */
  readonly lastRefresh: 'none' | 'full' | 'incremental';
  dispose(): void;
}

const FENCE_TIMEOUT_MS = 2_000;
/** Inotify watches are a per-user budget VS Code's own file watcher shares: a huge tree is scanned instead. */
const MAX_WATCHED_DIRS = 16_384;

function kernelQueueLimit(): number {
  try {
    return Number(fs.readFileSync('/proc/sys/fs/inotify/max_queued_events', 'utf8').trim()) || 16_384;
  } catch {
    return 16_384;
  }
}

interface WatchedDir {
  readonly watcher: fs.FSWatcher;
  readonly ino: number;
  readonly ignored: boolean;
}

export function createLiveScan(options: LiveScanOptions): LiveScan {
  const root = options.root;
  const skip = new Set(options.skipDirs);
  let watching = (options.detector ?? 'watch') === 'watch' && process.platform === 'linux';
  let scan: Scan | undefined;
  let matcher: IgnoreMatcher = createIgnoreMatcher(root);
  const dirs = new Map<string, WatchedDir>();
  /** Paths the kernel reported since the last refresh ("" is the root). */
  let dirty = new Set<string>();
  /**
   * Read again whole: folders whose event carried no name, and paths created, deleted or moved (a
   * folder deleted and made again can get its old inode back, and with it a watch that is dead).
   */
  let forced = new Set<string>();
  let events = 0;
  let needsFull = true;
  // Above a quarter of the kernel's queue, an overflow (whose notice Node drops) cannot be ruled out.
  const overflowGuard = Math.max(256, Math.floor(kernelQueueLimit() / 4));
  let lastRefresh: LiveScan['lastRefresh'] = 'none';
  let fence: fs.FSWatcher | undefined;
  let fenceSeq = 0;
  const fenceWaiters = new Map<string, () => void>();
  let queue: Promise<unknown> = Promise.resolve();

  const absOf = (rel: string) => (rel === '' ? root : path.join(root, ...rel.split('/')));
  const stopWatching = (why: string | undefined) => {
    if (!watching) return;
    watching = false;
    if (why) options.log?.(`change detection falls back to full scans: ${why}`);
    for (const d of dirs.values()) d.watcher.close();
    dirs.clear();
    fence?.close();
    fence = undefined;
  };

  const onEvent = (dirRel: string, eventType: string, filename: string | Buffer | null) => {
    events++;
    if (filename === null) {
      dirty.add(dirRel);
      forced.add(dirRel);
      return;
    }
    const name = String(filename);
    if (name === '.gitignore') needsFull = true; // ignore rules decide what is scanned
    const rel = dirRel === '' ? name : `${dirRel}/${name}`;
    dirty.add(rel);
    if (eventType === 'rename') forced.add(rel);
  };

  /** Starts watching a directory before it is read, so nothing written meanwhile goes unseen. */
  const watchDir = (rel: string, abs: string, ino: number, ignored: boolean) => {
    if (!watching) return;
    const known = dirs.get(rel);
    if (known && known.ino === ino) return;
    known?.watcher.close();
    dirs.delete(rel);
    if (dirs.size >= MAX_WATCHED_DIRS) {
      stopWatching(`more than ${MAX_WATCHED_DIRS} folders to watch`);
      return;
    }
    try {
      const watcher = fs.watch(abs, { persistent: false }, (event, filename) =>
        onEvent(rel, event, filename),
      );
      watcher.on('error', () => {
        dirty.add(rel);
        watcher.close();
        if (dirs.get(rel)?.watcher === watcher) dirs.delete(rel);
      });
      dirs.set(rel, { watcher, ino, ignored });
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ENOTDIR') return; // vanished: its parent's event says so
      stopWatching(`cannot watch ${abs} (${code ?? String(error)})`);
    }
  };

  const forgetDirs = (rel: string) => {
    for (const [d, w] of dirs)
      if (d === rel || d.startsWith(`${rel}/`)) {
        w.watcher.close();
        dirs.delete(d);
      }
  };

  /** Walks one directory tree (watching each folder first), adding its files to `into`. */
  const walk = (dirAbs: string, dirRel: string, ignoredDir: boolean, into: Scan, seenDirs: Set<string>) => {
    if (watching) {
      let st: fs.Stats;
      try {
        st = fs.lstatSync(dirAbs);
      } catch {
        return;
      }
      watchDir(dirRel, dirAbs, st.ino, ignoredDir);
    }
    seenDirs.add(dirRel);
    let entries: fs.Dirent[];
    try {
      entries = fs.readdirSync(dirAbs, { withFileTypes: true });
    } catch {
      return;
    }
    for (const entry of entries) {
      const name = entry.name;
      const abs = `${dirAbs}${path.sep}${name}`;
      const rel = dirRel === '' ? name : `${dirRel}/${name}`;
      if (entry.isDirectory()) {
        if (name === '.git' || skip.has(abs)) continue;
        walk(abs, rel, ignoredDir || matcher.isIgnored(rel, true), into, seenDirs);
        continue;
      }
      if (!entry.isFile()) continue;
      const file = fileEntry(rel, abs, ignoredDir);
      if (file) into.set(rel, file);
    }
  };

  const fileEntry = (rel: string, abs: string, ignoredDir: boolean): ScanEntry | undefined => {
    let stat: fs.Stats;
    try {
      stat = fs.lstatSync(abs);
    } catch {
      return undefined;
    }
    if (!stat.isFile()) return undefined;
    if (stat.size > options.ignoredSizeCap && (ignoredDir || matcher.isIgnored(rel, false))) return undefined;
    return entryOf(stat, ignoredDir);
  };

  const diff = (before: Scan, after: Scan): ScanChange[] => {
    const out: ScanChange[] = [];
    for (const [rel, entry] of after) {
      const prior = before.get(rel);
      if (!prior || !sameSignature(prior, entry)) out.push({ rel, before: prior, after: entry });
    }
    for (const [rel, entry] of before)
      if (!after.has(rel)) out.push({ rel, before: entry, after: undefined });
    return out;
  };

  const fullRefresh = (): ScanChange[] => {
    const previous = scan ?? new Map<string, ScanEntry>();
    dirty = new Set();
    forced = new Set();
    events = 0;
    needsFull = false;
    matcher = createIgnoreMatcher(root);
    let next: Scan;
    if (watching) {
      next = new Map();
      const seenDirs = new Set<string>();
      walk(root, '', false, next, seenDirs);
      for (const [d, w] of dirs)
        if (!seenDirs.has(d)) {
          w.watcher.close();
          dirs.delete(d);
        }
    } else {
      next = scanWorkspace(options);
    }
    scan = next;
    lastRefresh = 'full';
    return diff(previous, next);
  };

  const isSkipped = (rel: string) => {
    const parts = rel.split('/');
    if (parts.includes('.git')) return true;
    for (let i = 1; i <= parts.length; i++) if (skip.has(absOf(parts.slice(0, i).join('/')))) return true;
    return false;
  };

  const incrementalRefresh = (current: Scan): ScanChange[] => {
    const paths = [...dirty].sort();
    const rescan = forced;
    dirty = new Set();
    forced = new Set();
    events = 0;
    const changes = new Map<string, ScanChange>();
    const note = (rel: string, before: ScanEntry | undefined, after: ScanEntry | undefined) => {
      const first = changes.get(rel);
      changes.set(rel, { rel, before: first ? first.before : before, after });
    };
    const dropTree = (rel: string) => {
      if (!dirs.has(rel)) return;
      forgetDirs(rel);
      const prefix = `${rel}/`;
      for (const [p, e] of current)
        if (p.startsWith(prefix)) {
          current.delete(p);
          note(p, e, undefined);
        }
    };
    const parentIgnored = (rel: string) => {
      const slash = rel.lastIndexOf('/');
      return dirs.get(slash < 0 ? '' : rel.slice(0, slash))?.ignored ?? false;
    };
    for (const rel of paths) {
      if (rel !== '' && isSkipped(rel)) continue;
      const abs = absOf(rel);
      let stat: fs.Stats | undefined;
      try {
        stat = fs.lstatSync(abs);
      } catch {
        stat = undefined;
      }
      const old = current.get(rel);
      if (stat?.isDirectory()) {
        if (old) {
          current.delete(rel);
          note(rel, old, undefined);
        }
        const watched = dirs.get(rel);
        if (watched && watched.ino === stat.ino && !rescan.has(rel)) continue; // its files report themselves
        if (rel !== '') dropTree(rel);
        const ignored = rel === '' ? false : parentIgnored(rel) || matcher.isIgnored(rel, true);
        const found: Scan = new Map();
        const prefix = rel === '' ? '' : `${rel}/`;
        walk(abs, rel, ignored, found, new Set());
        // A whole-tree rescan of the root (an event without a name) compares against everything.
        if (rel === '')
          for (const [p, e] of current)
            if (!found.has(p)) {
              current.delete(p);
              note(p, e, undefined);
            }
        for (const [p, e] of found) {
          if (!p.startsWith(prefix)) continue;
          const prior = current.get(p);
          if (!prior || !sameSignature(prior, e)) note(p, prior, e);
          current.set(p, e);
        }
        continue;
      }
      dropTree(rel);
      const next = stat?.isFile() ? fileEntry(rel, abs, parentIgnored(rel)) : undefined;
      if (next) current.set(rel, next);
      else current.delete(rel);
      if (old === undefined && next === undefined) continue;
      if (old && next && sameSignature(old, next)) {
        current.set(rel, next); // ctime or mode only: keep the newest stamps, no change to report
        continue;
      }
      note(rel, old, next);
    }
    lastRefresh = 'incremental';
    return [...changes.values()].filter(
      (c) => !(c.before && c.after && sameSignature(c.before, c.after)) && (c.before || c.after),
    );
  };

  /** Resolves once every change made before the call has been delivered to `onEvent`. */
  const awaitFence = async (): Promise<boolean> => {
    if (!fence) {
      try {
        fs.mkdirSync(options.fenceDir, { recursive: true });
        fence = fs.watch(options.fenceDir, { persistent: false }, (_event, filename) => {
          const name = filename === null ? '' : String(filename);
          const waiter = fenceWaiters.get(name);
          if (waiter) {
            fenceWaiters.delete(name);
            waiter();
          }
        });
        fence.on('error', () => stopWatching('the fence folder vanished'));
      } catch (error) {
        stopWatching(`cannot watch the fence folder (${String(error)})`);
        return false;
      }
    }
    const name = `fence-${process.pid}-${++fenceSeq}`;
    const file = path.join(options.fenceDir, name);
    let timer: NodeJS.Timeout | undefined;
    const seen = new Promise<boolean>((resolve) => {
      fenceWaiters.set(name, () => resolve(true));
      timer = setTimeout(() => resolve(false), FENCE_TIMEOUT_MS);
    });
    try {
      fs.writeFileSync(file, '');
    } catch (error) {
      fenceWaiters.delete(name);
      clearTimeout(timer);
      stopWatching(`cannot write the fence file (${String(error)})`);
      return false;
    }
    const ok = await seen;
    clearTimeout(timer);
    fenceWaiters.delete(name);
    fs.rmSync(file, { force: true });
    return ok;
  };

  const refreshNow = async (): Promise<ScanChange[]> => {
    if (!watching || needsFull || scan === undefined) return fullRefresh();
    if (!(await awaitFence())) {
      stopWatching('a change notice did not arrive in time');
      return fullRefresh();
    }
    if (needsFull || events >= overflowGuard) return fullRefresh();
    return incrementalRefresh(scan);
  };

  return {
    refresh() {
      const next = queue.then(refreshNow, refreshNow);
      queue = next.catch(() => undefined);
      return next;
    },
    entry: (rel) => scan?.get(rel),
    get lastRefresh() {
      return lastRefresh;
    },
    dispose() {
      stopWatching(undefined);
      for (const w of fenceWaiters.values()) w();
      fenceWaiters.clear();
    },
  };
}

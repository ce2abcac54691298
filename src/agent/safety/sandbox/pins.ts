import * as fs from 'node:fs';
import * as path from 'node:path';
import type { SandboxDenial } from '../../host.ts';
import { hostAuthored } from './hostWrites.ts';
import { keptAt, setAside } from './setAside.ts';

// How a path inside the writable area is kept from being changed or created by a sandboxed command,
// without leaving anything in the user's tree:
// - it exists: bound read-only over itself (a mount point also cannot be removed or renamed over);
// - it does not exist: nothing can be mounted there without creating it on the host, so it is
//   checked after the command (and while a long one runs): what the command created is removed,
//   along with the folders it made for it, and reported as a refusal;
// - it is a symlink: the link cannot be pinned (only what it points at), so the link is remembered
//   and put back if the command replaced it;
// - a pinned path whose folder the command renamed away (the mount travels with the folder) shows
//   up as a new file at the old path: removed too.
// What Keel's own edit tools wrote meanwhile (the user approved it) is left alone.

export interface Pin {
  /** Absolute path. */
  readonly path: string;
  /** Why it is pinned: who would act on it later. */
  readonly why: string;
  /** Where removing made-up parents stops (the root or git dir the path is relative to). */
  readonly base: string;
  /**
   * When the path was missing and is there now: undo only what is harmful in it (a git config's
   * driver keys, active hooks) instead of removing it. Another process may have made it meanwhile
   * (a concurrent `git init`), and what it made must not be lost when it runs nothing.
   */
  readonly settleCreated?: (p: string) => SandboxDenial[];
}

type Snapshot =
  | { readonly kind: 'missing'; readonly pin: Pin; readonly topMissing: string }
  | {
      readonly kind: 'present';
      readonly pin: Pin;
      readonly dev: number;
      readonly ino: number;
      /** The folder holding it: a command can only swap the file by moving this folder away. */
      readonly parent: string;
    }
  | {
      readonly kind: 'link';
      readonly pin: Pin;
      readonly link: string;
      readonly target: string;
      readonly targetExisted: boolean;
    }
  | {
      readonly kind: 'pattern';
      readonly pin: Pin;
      readonly dir: string;
      readonly before: ReadonlySet<string>;
    };

export interface PinState {
  readonly snapshots: Snapshot[];
}

function lstat(p: string): fs.Stats | undefined {
  try {
    return fs.lstatSync(p);
  } catch {
    return undefined;
  }
}

function patternRe(name: string): RegExp {
  const body = name.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[^/]*');
  return new RegExp(`^${body}$`);
}

function matching(dir: string, re: RegExp): string[] {
  try {
    return fs.readdirSync(dir).filter((n) => re.test(n));
  } catch {
    return [];
  }
}

/** The highest ancestor of `p` (up to `p` itself, below `base`) that does not exist. */
function topMissing(p: string, base: string): string {
  let top = p;
  for (let dir = path.dirname(p); dir.startsWith(base + path.sep) && !lstat(dir); dir = path.dirname(dir))
    top = dir;
  return top;
}

/** Pins `pin` for one command: bwrap arguments into `args`, what to check afterwards into `state`. */
export function planPin(pin: Pin, args: string[], state: PinState): void {
  const base = path.basename(pin.path);
  if (base.includes('*')) {
    const dir = path.dirname(pin.path);
    const names = matching(dir, patternRe(base));
    for (const name of names) planPin({ ...pin, path: path.join(dir, name) }, args, state);
    state.snapshots.push({ kind: 'pattern', pin, dir, before: new Set(names) });
    return;
  }
  const stat = lstat(pin.path);
  if (!stat) {
    state.snapshots.push({ kind: 'missing', pin, topMissing: topMissing(pin.path, pin.base) });
    return;
  }
  if (stat.isSymbolicLink()) {
    const target = path.resolve(path.dirname(pin.path), fs.readlinkSync(pin.path));
    const targetExisted = fs.existsSync(pin.path);
    // A mount on a link lands on what it points at: that cannot change; the link itself is checked after.
    if (targetExisted) args.push('--ro-bind', pin.path, pin.path);
    state.snapshots.push({ kind: 'link', pin, link: fs.readlinkSync(pin.path), target, targetExisted });
    return;
  }
  args.push('--ro-bind', pin.path, pin.path);
  state.snapshots.push({
    kind: 'present',
    pin,
    dev: stat.dev,
    ino: stat.ino,
    parent: identity(path.dirname(pin.path)),
  });
}

function identity(p: string): string {
  const stat = lstat(p);
  return stat ? `${stat.dev}:${stat.ino}` : '';
}

/** Takes `p` out of the tree (set aside, not deleted) and says where it went. */
function takeOut(p: string): string {
  return keptAt(setAside(p));
}

function removeMade(p: string, topMissing: string): string {
  const kept = takeOut(p);
  // Folders the command made on the way are litter too; ones it also put other files in stay.
  for (let dir = path.dirname(p); dir === topMissing || dir.startsWith(topMissing + path.sep); ) {
    try {
      fs.rmdirSync(dir);
    } catch {
      break;
    }
    dir = path.dirname(dir);
  }
  return kept;
}

function denial(p: string, why: string, what: string): SandboxDenial {
  return { kind: 'write', target: p, detail: `${what}: ${why}` };
}

/**
 * After the command (or while it runs): undoes what it left at pinned paths. `writable` says what
 * the sandbox could have written (nothing outside it is ever removed).
 */
export function settlePins(state: PinState, writable: (p: string) => boolean): SandboxDenial[] {
  const out: SandboxDenial[] = [];
  for (const snap of state.snapshots) {
    const p = snap.pin.path;
    if (snap.kind === 'pattern') {
      for (const name of matching(snap.dir, patternRe(path.basename(p)))) {
        const made = path.join(snap.dir, name);
        if (snap.before.has(name) || hostAuthored(made)) continue;
        out.push(denial(made, snap.pin.why, `created by the command; removed (${takeOut(made)})`));
      }
      continue;
    }
    const now = lstat(p);
    if (!now || !writable(p)) continue;
    if (snap.kind === 'missing') {
      if (hostAuthored(p)) continue;
      // A link is never followed: cleaning what it points at would write outside the sandbox.
      if (snap.pin.settleCreated && !now.isSymbolicLink()) {
        out.push(...snap.pin.settleCreated(p));
        continue;
      }
      const kept = removeMade(p, snap.topMissing);
      out.push(denial(p, snap.pin.why, `created by the command; removed (${kept})`));
    } else if (snap.kind === 'present') {
      if ((now.dev === snap.dev && now.ino === snap.ino) || hostAuthored(p)) continue;
      // Inside the sandbox the pinned path is a mount point: it cannot be unlinked or renamed over
      // there. Swapped within the same folder, it was swapped from outside (git rewriting its config
      // through a lock file, an editor saving): the user's doing, left alone.
      if (identity(path.dirname(p)) === snap.parent) continue;
      // Its folder was renamed away (the read-only mount went with it) and a new one made here.
      out.push(
        denial(
          p,
          snap.pin.why,
          `replaced by the command (its folder was moved); the new one removed (${takeOut(p)})`,
        ),
      );
    } else {
      const intact = now.isSymbolicLink() && fs.readlinkSync(p) === snap.link;
      if (!intact && !hostAuthored(p)) {
        const kept = takeOut(p);
        fs.symlinkSync(snap.link, p);
        out.push(denial(p, snap.pin.why, `link replaced by the command; restored (the replacement ${kept})`));
      } else if (intact && !snap.targetExisted && lstat(snap.target) && writable(snap.target)) {
        out.push(
          denial(
            snap.target,
            snap.pin.why,
            `created through the link ${p}; removed (${takeOut(snap.target)})`,
          ),
        );
      }
    }
  }
  return out;
}

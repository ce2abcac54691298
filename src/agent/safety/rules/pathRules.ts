import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { canonicalize } from '../paths/pathGuard.ts';
import { type Arg, parseOpts, type RuleContext } from './commandTypes.ts';
import { protectedInside, realLocation } from './outsidePaths.ts';

// Rules about WHERE a command acts: deletes, overwrites, permission changes and copies are judged by
// the paths they touch (inside the workspace, outside it, or a tree whose loss is unrecoverable).

// Top-level directories whose recursive deletion or chmod breaks the machine.
const SYSTEM_DIRS = new Set([
  '/bin',
  '/boot',
  '/dev',
  '/etc',
  '/home',
  '/lib',
  '/lib32',
  '/lib64',
  '/libx32',
  '/media',
  '/mnt',
  '/opt',
  '/proc',
  '/root',
  '/run',
  '/sbin',
  '/snap',
  '/srv',
  '/sys',
  '/usr',
  '/var',
  '/Applications',
  '/Library',
  '/System',
  '/Users',
  '/private',
]);

const DISK_DEVICE = /^\/dev\/(sd|hd|vd|xvd|nvme|mmcblk|disk|rdisk|md|dm-|mapper\/|loop|sr|mem$|kmem$|port$)/;
const HARMLESS_DEVICE = /^\/dev\/(null|zero|full|stdin|stdout|stderr|tty|random|urandom|fd\/\d+|pts\/\d+)$/;
const SCRATCH_DIRS = [os.tmpdir(), '/tmp', '/var/tmp'];

export function isInside(child: string, parent: string): boolean {
  const rel = path.relative(parent, child);
  // `...` is a name, not a climb (`go test ./...`).
  return rel === '' || (rel !== '..' && !rel.startsWith(`..${path.sep}`) && !path.isAbsolute(rel));
}

/** Absolute, normalised path; undefined when relative to a directory we lost track of. */
export function resolvePath(p: string, rc: RuleContext): string | undefined {
  if (path.isAbsolute(p)) return path.resolve(p);
  if (rc.cwd === undefined) return undefined;
  return path.resolve(rc.cwd, p);
}

export function canonical(p: string): string {
  try {
    return canonicalize(p);
  } catch {
    return p;
  }
}

/** Why deleting (or chmod -R'ing) this whole tree would be a disaster, or undefined if it would not. */
export function criticalTree(abs: string, rc: RuleContext): string | undefined {
  for (const candidate of new Set([abs, canonical(abs)])) {
    if (candidate === '/') return 'the filesystem root';
    if (SYSTEM_DIRS.has(candidate)) return `the system directory ${candidate}`;
    if (candidate === rc.home) return 'your home directory';
    if (/^\/(home|Users)\/[^/]+$/.test(candidate)) return `the home directory ${candidate}`;
    if (candidate === rc.workspaceRoot) return 'the whole workspace';
    if (isInside(rc.home, candidate)) return `${candidate}, which contains your home directory`;
    if (isInside(rc.workspaceRoot, candidate)) return `${candidate}, which contains the workspace`;
  }
  return undefined;
}

export interface TargetInfo {
  readonly display: string;
  /** Absolute path when known. */
  readonly abs?: string;
  /** Reason the target is a critical tree (root, home, workspace, system dir). */
  readonly critical?: string;
  readonly inside: boolean;
  readonly known: boolean;
}

/**
 * Where an operand points. Globs that match a whole directory (`dir/*`, `.*`) count as that directory;
 * unknown parts were already replaced by '' (worst case: `"$DIR"/` is `/`).
 */
export function target(arg: Arg, rc: RuleContext): TargetInfo {
  let p = arg.value;
  if (p === '' && !arg.exact) return { display: '(unknown path)', inside: false, known: false };
  if (arg.glob) {
    const segs = p.split('/');
    const firstGlob = segs.findIndex((s) => /[*?[]/.test(s));
    const wholeDir = firstGlob === segs.length - 1 && /^\.?\*+$/.test(segs[firstGlob] ?? '');
    const base = segs.slice(0, firstGlob).join('/') || (p.startsWith('/') ? '/' : '.');
    if (!wholeDir) {
      const abs = resolvePath(base, rc);
      // `rm -rf /u*` or `/[u]sr`: what the pattern matches on this machine decides.
      const hit = expandGlob(p, rc.cwd)
        .map((m) => criticalTree(m, rc))
        .find((c) => c !== undefined);
      if (hit) return { display: p, ...(abs ? { abs } : {}), critical: hit, inside: false, known: false };
      return {
        display: p,
        ...(abs ? { abs } : {}),
        inside: abs ? isInside(abs, rc.workspaceRoot) : false,
        known: false,
      };
    }
    p = base;
  }
  const abs = resolvePath(p, rc);
  if (abs === undefined) return { display: arg.value, inside: false, known: false };
  const real = realLocation(abs, rc);
  const critical = criticalTree(abs, rc) ?? (real !== abs ? criticalTree(real, rc) : undefined);
  return {
    display: arg.value,
    abs,
    ...(critical ? { critical } : {}),
    inside: isInside(real, rc.workspaceRoot),
    known: arg.exact && !arg.glob,
  };
}

export const MAX_GLOB_MATCHES = 64;

/** Expands a glob pattern against the real filesystem (bounded); [] when nothing matches. */
export function expandGlob(pattern: string, cwd: string | undefined): string[] {
  const toRegex = (seg: string) =>
    new RegExp(
      `^${seg
        .replace(/[.+^${}()|\\]/g, '\\$&')
        .replace(/\*/g, '.*')
        .replace(/\?/g, '.')
        .replace(/\[!/g, '[^')}$`,
    );
  const start = pattern.startsWith('/') ? '/' : cwd;
  if (start === undefined) return [];
  let dirs = [start];
  for (const seg of pattern.split('/').filter((x) => x !== '')) {
    const next: string[] = [];
    for (const dir of dirs) {
      if (!/[*?[]/.test(seg)) {
        next.push(path.join(dir, seg));
        continue;
      }
      let names: string[] = [];
      try {
        names = fs.readdirSync(dir);
      } catch {
        names = [];
      }
      const re = toRegex(seg);
      for (const n of names)
        if (re.test(n) && !(n.startsWith('.') && !seg.startsWith('.'))) next.push(path.join(dir, n));
    }
    dirs = next.slice(0, MAX_GLOB_MATCHES);
  }
  return dirs.filter((d) => fs.existsSync(d));
}

function isScratch(abs: string): boolean {
  return SCRATCH_DIRS.some((d) => isInside(abs, d));
}

/** Deleting operands (rm, rimraf, shred…): recursive removal of a critical tree is never allowed. */
export function judgeDelete(
  program: string,
  operands: readonly Arg[],
  recursive: boolean,
  rc: RuleContext,
): void {
  let risk: 'medium' | 'high' = 'medium';
  const shown: string[] = [];
  const notes: string[] = [];
  for (const op of operands) {
    const t = target(op, rc);
    shown.push(t.display);
    if (t.critical && (recursive || t.abs === '/')) {
      rc.add({
        class: 'never',
        risk: 'high',
        program,
        reason: `${program} would recursively delete ${t.critical}${op.exact ? '' : ` (if "${t.display}" expands as written)`}`,
      });
      return;
    }
    if (t.abs && DISK_DEVICE.test(t.abs)) {
      rc.add({ class: 'never', risk: 'high', program, reason: `${program} on the disk device ${t.abs}` });
      return;
    }
    if (!t.inside || !op.exact) risk = 'high';
    // Deleting Keel's audit log or .git is never covered by an earlier "allow rm for this session".
    const guarded =
      t.abs && t.inside ? protectedInside(realLocation(t.abs, rc), rc.workspaceRoot) : undefined;
    if (guarded) notes.push(`${t.display} is ${guarded}`);
    if (t.abs === undefined && recursive && /^\.?\*?$|^\.\/\*?$/.test(op.value)) risk = 'high';
  }
  if (operands.length === 0) risk = 'high';
  const why =
    risk === 'high'
      ? ' (outside the workspace or not known in advance)'
      : notes.length
        ? ` (${notes.join('; ')})`
        : '';
  rc.add({
    class: 'destructive',
    risk: notes.length ? 'high' : risk,
    program,
    reason: `deletes ${shown.length ? shown.join(' ') : 'files named on its input'}${why}`,
    // Deleting Keel's audit log or .git is never covered by an earlier "allow rm for this session".
    sessionKey: risk === 'high' || notes.length ? undefined : `destructive:${program}`,
  });
}

export type WriteMode = 'overwrite' | 'append' | 'create';

/** A path the command writes to (redirections, tee, cp/mv destinations, dd of=…). */
export function judgeWrite(program: string, arg: Arg, mode: WriteMode, rc: RuleContext): void {
  const p = arg.value;
  if (HARMLESS_DEVICE.test(p) && arg.exact) return;
  if (DISK_DEVICE.test(p) || /^\/proc\/(sysrq-trigger|sys\/)|^\/sys\//.test(p)) {
    rc.add({ class: 'never', risk: 'high', program, reason: `writes directly to ${p}` });
    return;
  }
  if (/^\/dev\/(tcp|udp)\//.test(p)) {
    rc.add({
      class: 'network',
      risk: 'high',
      program,
      reason: `opens a network connection via ${p}`,
      fetches: true,
    });
    return;
  }
  if (p.startsWith('/dev/')) {
    rc.add({ class: 'destructive', risk: 'high', program, reason: `writes to the device ${p}` });
    return;
  }
  if (!arg.exact || arg.glob) {
    rc.add({
      class: 'unknown',
      risk: 'medium',
      program,
      reason: `writes to a path not known in advance (${p || '?'})`,
    });
    return;
  }
  const abs = resolvePath(p, rc);
  if (abs === undefined) {
    rc.add({
      class: 'unknown',
      risk: 'medium',
      program,
      reason: `writes to ${p} relative to a directory that is not known`,
    });
    return;
  }
  const where = realLocation(abs, rc);
  const exists = rc.isFile(where);
  if (isInside(where, rc.workspaceRoot)) {
    const guarded = protectedInside(where, rc.workspaceRoot);
    if (guarded) {
      // .git (hooks and config run code) and .keel (Keel's state, the audit log): never silently.
      rc.add({
        class: 'destructive',
        risk: 'high',
        program,
        reason: `writes ${p}, ${guarded}`,
      });
    } else if (mode === 'overwrite' && exists) {
      rc.add({
        class: 'destructive',
        risk: 'medium',
        program,
        reason: `overwrites the existing file ${p}`,
        suggestion: 'Use Edit or Write to change files, so the change can be reviewed.',
        sessionKey: 'destructive:overwrite',
      });
    }
    return;
  }
  if (isScratch(where) && !isInside(where, rc.home) && !(mode === 'overwrite' && exists)) return;
  const shown = where === abs ? p : `${p} (→ ${where})`;
  rc.add({ class: 'destructive', risk: 'high', program, reason: `writes outside the workspace: ${shown}` });
}

/** chmod/chown/chgrp: changes to critical trees are never allowed. */
export function judgePermissions(program: string, args: readonly Arg[], rc: RuleContext): void {
  const opts = parseOpts(args, { longValued: ['--reference'] });
  const recursive = opts.has('-R', '--recursive');
  const paths = opts.has('--reference') ? opts.operands : opts.operands.slice(1);
  for (const op of paths) {
    const t = target(op, rc);
    if (t.critical && (recursive || t.abs === '/' || (t.abs !== undefined && SYSTEM_DIRS.has(t.abs)))) {
      rc.add({
        class: 'never',
        risk: 'high',
        program,
        reason: `${program}${recursive ? ' -R' : ''} on ${t.critical}`,
      });
      return;
    }
    if (!t.inside || !op.exact) {
      rc.add({
        class: 'destructive',
        risk: 'high',
        program,
        reason: `${program} outside the workspace: ${t.display}`,
      });
      return;
    }
  }
  if (recursive) {
    rc.add({
      class: 'destructive',
      risk: 'medium',
      program,
      reason: `${program} -R changes a whole tree`,
      sessionKey: `destructive:${program}`,
    });
    return;
  }
  const mode = opts.operands[0]?.value ?? '';
  // `chmod 000 f`, `chmod a-rwx f`, `chattr +i f`: files become unreadable or unchangeable.
  const removes = program === 'chmod' ? chmodRemovesAccess(mode) : true;
  if (removes) {
    rc.add({
      class: 'destructive',
      risk: 'medium',
      program,
      reason: `${program} ${mode} takes access away or changes ownership`,
      sessionKey: `destructive:${program}`,
    });
    return;
  }
  rc.add({ class: 'safe', risk: 'low', program, reason: 'permission change inside the workspace' });
}

/** `chmod 000`, `chmod 444`, `chmod u-w`, `chmod a=`: the owner loses read or write access. */
function chmodRemovesAccess(mode: string): boolean {
  if (/^[0-7]{1,4}$/.test(mode)) return Number(mode.padStart(3, '0').slice(-3)[0]) < 6;
  return mode.split(',').some((clause) => /^[ua]*-.*[rw]/.test(clause) || /^[ua]*=[^rw]*$/.test(clause));
}

/** Redirections and `tee`: where output goes. */
export function judgeRedirectTarget(arg: Arg, append: boolean, rc: RuleContext): void {
  judgeWrite('redirection', arg, append ? 'append' : 'overwrite', rc);
}

import * as fs from 'node:fs';
import * as path from 'node:path';
import { type Arg, parseOpts, type RuleContext } from './commandTypes.ts';
import { protectedInside, realLocation } from './outsidePaths.ts';
import { canonical, isInside, judgeWrite, resolvePath, target } from './pathRules.ts';

// Commands that copy, move or link files (cp, mv, ln, install) and dd: judged by where they write,
// and — for mv — by what they take away. What they create is remembered for the rest of the line
// (`ln -s /bin/rm x; ./x -rf /` runs rm; `ln -s ~ h; echo x > h/f` writes to home).

/** cp, mv, ln, install, rsync (local): judged by their destination (and, for mv, their sources). */
export function judgeCopy(program: string, args: readonly Arg[], rc: RuleContext): void {
  const spec = {
    valued: program === 'install' ? 'tgmoS' : 'tS',
    longValued: ['--target-directory', '--suffix'],
  };
  const opts = parseOpts(args, spec);
  const explicitTarget = opts.get('-t') ?? opts.get('--target-directory');
  const operands = opts.operands;
  const dest =
    explicitTarget !== undefined
      ? { value: explicitTarget, exact: true, glob: false, substs: [] }
      : operands.at(-1);
  const sources = explicitTarget !== undefined ? operands : operands.slice(0, -1);
  if (program === 'mv') {
    for (const src of sources) {
      const t = target(src, rc);
      if (t.critical) {
        rc.add({ class: 'never', risk: 'high', program, reason: `mv would move away ${t.critical}` });
        return;
      }
      const guarded =
        t.abs && t.inside ? protectedInside(realLocation(t.abs, rc), rc.workspaceRoot) : undefined;
      if (guarded)
        rc.add({
          class: 'destructive',
          risk: 'high',
          program,
          reason: `moves ${t.display} away, ${guarded}`,
        });
      if (!t.inside && t.known) {
        rc.add({
          class: 'destructive',
          risk: 'high',
          program,
          reason: `moves ${t.display} from outside the workspace`,
        });
      }
    }
  }
  if (dest === undefined) {
    rc.add({ class: 'safe', risk: 'low', program, reason: 'nothing to copy' });
    return;
  }
  if (dest.exact && dest.value === '/dev/null' && program === 'mv') {
    rc.add({ class: 'destructive', risk: 'high', program, reason: 'moves files onto /dev/null' });
    return;
  }
  // Onto an existing file (or into a directory that holds one of that name) is an overwrite.
  const destAbs = dest.exact && !dest.glob ? resolvePath(dest.value, rc) : undefined;
  const intoDir = destAbs !== undefined && isDirectory(destAbs);
  const noClobber = opts.has('-n', '--no-clobber', '-b', '--backup') || opts.flags.get('--update') === 'none';
  const finals = intoDir
    ? sources.map((s) => ({ ...dest, value: path.join(dest.value, path.basename(s.value)) }))
    : [dest];
  for (const f of finals) judgeWrite(program, f, noClobber ? 'create' : 'overwrite', rc);
  if (program === 'mv' && destAbs && !isInside(canonical(destAbs), rc.workspaceRoot)) {
    rc.add({
      class: 'destructive',
      risk: 'medium',
      program,
      reason: `moves files out of the workspace to ${dest.value}`,
      sessionKey: 'destructive:mv-out',
    });
  }
  if (destAbs) {
    sources.forEach((s, k) => {
      const target = intoDir ? path.join(destAbs, path.basename(s.value)) : destAbs;
      const from = s.exact ? resolvePath(s.value, rc) : undefined;
      const known = from ? rc.written(from) : undefined;
      // A copy of (or link to) a system program is that program: `ln -s /bin/rm x; ./x -rf /`.
      const system = from && /^\/(usr\/)?(local\/)?s?bin\//.test(from) ? path.basename(from) : undefined;
      const symlink =
        program === 'ln' && opts.has('-s', '--symbolic') && s.exact
          ? path.resolve(path.dirname(target), s.value)
          : undefined;
      const info = {
        ...(known ?? {}),
        ...(system ? { program: system } : {}),
        ...(symlink ? { link: symlink } : {}),
      };
      if (k < 1 || intoDir) rc.markWritten(target, info);
    });
  }
  rc.add({ class: 'safe', risk: 'low', program, reason: `${program} inside the workspace` });
}

function isDirectory(p: string): boolean {
  try {
    return fs.statSync(p).isDirectory();
  } catch {
    return false;
  }
}

/** dd: the output decides (disks → never, files → destructive). */
export function judgeDd(args: readonly Arg[], rc: RuleContext): void {
  const of = args.find((a) => a.value.startsWith('of='));
  if (of) {
    const out: Arg = { ...of, value: of.value.slice(3) };
    judgeWrite('dd', out, 'overwrite', rc);
    rc.add({
      class: 'destructive',
      risk: 'medium',
      program: 'dd',
      reason: `dd writes raw bytes to ${out.value}`,
      sessionKey: 'destructive:dd',
    });
    return;
  }
  rc.add({
    class: 'destructive',
    risk: 'medium',
    program: 'dd',
    reason: 'dd copies raw bytes',
    sessionKey: 'destructive:dd',
  });
}

import * as fs from 'node:fs';
import * as path from 'node:path';
import { type Arg, parseOpts, type RuleContext } from './commandTypes.ts';
import { harmlessOutside, isInside, realLocation } from './outsidePaths.ts';
import { judgeWrite, resolvePath } from './pathRules.ts';

// Links (ln, ln -s, cp -l/-s, link, mklink) judged by what they point at.
//
// A SYMBOLIC link to somewhere outside the workspace is a door: every later command that writes
// "inside" through it writes outside (`ln -s ~ h; echo x > h/.bashrc`). It needs approval.
//
// A HARD link to a file outside the workspace is never made (BLOCKED_BY_POLICY). It is not a door
// but the file itself under a second name: nothing on disk says it is a link, so the path guard of
// Read/Edit/Write (which follows symbolic links) sees an ordinary workspace file and would hand out
// or change the outside file's bytes — for the rest of the session and every later one, invisibly.
// Approving it once would open that hole for good, and no development task needs it (cp does).

interface LinkSpec {
  readonly kind: 'hard' | 'symbolic' | 'none';
  readonly sources: readonly Arg[];
  readonly dest: Arg | undefined;
}

function linkSpec(program: string, args: readonly Arg[]): LinkSpec {
  const opts = parseOpts(args, { valued: 'tS', longValued: ['--target-directory', '--suffix'] });
  const explicit = opts.get('-t') ?? opts.get('--target-directory');
  const operands = opts.operands;
  const dest =
    explicit !== undefined ? { value: explicit, exact: true, glob: false, substs: [] } : operands.at(-1);
  const sources = explicit !== undefined ? operands : operands.slice(0, -1);
  let kind: LinkSpec['kind'] = 'none';
  if (program === 'link') kind = 'hard';
  else if (program === 'ln') kind = opts.has('-s', '--symbolic') ? 'symbolic' : 'hard';
  else if (program === 'cp' && opts.has('-l', '--link')) kind = 'hard';
  else if (program === 'cp' && opts.has('-s', '--symbolic-link')) kind = 'symbolic';
  // `ln TARGET` alone links into the current directory.
  if (kind !== 'none' && program === 'ln' && explicit === undefined && operands.length === 1)
    return { kind, sources: operands, dest: { value: '.', exact: true, glob: false, substs: [] } };
  return { kind, sources, dest };
}

/** ln, link, cp -l/-s: where the new name will point. */
export function judgeLinks(program: string, args: readonly Arg[], rc: RuleContext): void {
  const { kind, sources, dest } = linkSpec(program, args);
  if (kind === 'none' || !dest) return;
  const destAbs = dest.exact ? resolvePath(dest.value, rc) : undefined;
  for (const source of sources) {
    if (!source.exact || source.glob || destAbs === undefined) {
      rc.add({
        class: 'destructive',
        risk: 'high',
        program,
        reason: `${program} makes a ${kind} link to a path not known in advance (${source.value || '?'})`,
      });
      continue;
    }
    // A symbolic link's text is resolved from the link's own directory; a hard link's from here.
    const from =
      kind === 'symbolic'
        ? path.resolve(isDirectoryLike(dest, destAbs) ? destAbs : path.dirname(destAbs), source.value)
        : resolvePath(source.value, rc);
    if (from === undefined) continue;
    // A drive or UNC path (`C:/x`, `\\host\share`) names another place whatever the cwd is.
    const foreign = /^[A-Za-z]:[\\/]|^[\\/]{2}/.test(source.value);
    const real = foreign ? source.value : realLocation(from, rc);
    if (!foreign && isInside(real, rc.workspaceRoot)) continue;
    if (kind === 'hard') {
      rc.add({
        class: 'never',
        risk: 'high',
        program,
        reason: `${program} would hard-link ${source.value}, a file outside the workspace, into it (the file tools could not tell it from a workspace file)`,
        suggestion: 'Copy the file instead if the user agrees, or ask the user to do it.',
      });
      continue;
    }
    if (!foreign && harmlessOutside(real)) continue;
    rc.add({
      class: 'destructive',
      risk: 'high',
      program,
      reason: `${program} makes a symbolic link to ${real}, outside the workspace (commands through it act outside)`,
    });
  }
}

function isDirectoryLike(dest: Arg, destAbs: string): boolean {
  if (dest.value.endsWith('/')) return true;
  try {
    return fs.statSync(destAbs).isDirectory();
  } catch {
    return false;
  }
}

/** Windows `mklink [/D|/H|/J] LINK TARGET` (under Git Bash, WSL interop, or a wrapper script). */
export function judgeMklink(program: string, args: readonly Arg[], rc: RuleContext): void {
  const flags = args.filter((a) => /^\/[a-z]$/i.test(a.value)).map((a) => a.value.toUpperCase());
  const [link, target] = args.filter((a) => !/^\/[a-z]$/i.test(a.value));
  if (!link || !target) return;
  const kind = flags.includes('/H') ? 'hard' : 'symbolic';
  judgeLinks(
    kind === 'hard' ? 'link' : 'ln',
    kind === 'hard' ? [target, link] : [lit('-s'), target, link],
    rc,
  );
  judgeWrite(program, link, 'create', rc);
}

const lit = (value: string): Arg => ({ value, exact: true, glob: false, substs: [] });

import * as fs from 'node:fs';
import * as path from 'node:path';

// Every path a suite names (its task files, a task's fixture and everything inside the fixture) must
// stay inside the suite's folder once symlinks are followed: a suite is repository content, and a
// fixture of `../../..`, `/home/me` or a link to `~/.ssh` would copy the user's files into a trial
// the model (and the report) can read. Checked before any trial starts.
// TODO: unify with the shared containment helper (containedPath) once it lands in safety/paths.

function inside(parent: string, child: string): boolean {
  const rel = path.relative(parent, child);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
}

/** The suite folder, canonical (symlinks followed). */
export function suiteRoot(dir: string): string {
  return fs.realpathSync(path.resolve(dir));
}

/**
 * `name` (as written in the suite, relative to it) resolved and contained; a problem sentence when
 * it is absolute, climbs out, or is (or passes through) a symlink to outside the suite.
 */
export function containedInSuite(
  root: string,
  name: string,
): { path: string; problem?: undefined } | { path?: undefined; problem: string } {
  if (path.isAbsolute(name) || /^[A-Za-z]:[\\/]/.test(name))
    return { problem: `${name} is an absolute path (paths are relative to the suite folder)` };
  const joined = path.resolve(root, name);
  if (!inside(root, joined)) return { problem: `${name} is outside the suite folder` };
  let real: string;
  try {
    real = fs.realpathSync(joined);
  } catch {
    // Missing: nothing to follow yet; the caller reports it as missing.
    return { path: joined };
  }
  if (!inside(root, real))
    return { problem: `${name} leads outside the suite folder through a symlink (to ${real})` };
  return { path: real };
}

const MAX_ENTRIES = 50_000;

/**
 * Symlinks inside a fixture whose target is outside the suite folder (the trial's copy would point at
 * the user's files). Dangling links count when their target would be outside. Returns the first few.
 */
export function linksOutOfSuite(root: string, dir: string): string[] {
  const found: string[] = [];
  const stack = [dir];
  let seen = 0;
  while (stack.length > 0 && found.length < 5) {
    const current = stack.pop() as string;
    let entries: fs.Dirent[];
    try {
      entries = fs.readdirSync(current, { withFileTypes: true });
    } catch {
      continue;
    }
    for (const entry of entries) {
      if (++seen > MAX_ENTRIES) {
        found.push(`${path.relative(root, dir)}: more than ${MAX_ENTRIES} entries (not checked further)`);
        return found;
      }
      const full = path.join(current, entry.name);
      if (entry.isSymbolicLink()) {
        const target = fs.readlinkSync(full);
        const resolved = path.resolve(path.dirname(full), target);
        let real = resolved;
        try {
          real = fs.realpathSync(full);
        } catch {
          // Dangling: judged by where it points.
        }
        if (!inside(root, resolved) || !inside(root, real))
          found.push(`${path.relative(root, full)} is a symlink to ${target}, outside the suite folder`);
      } else if (entry.isDirectory()) stack.push(full);
    }
  }
  return found;
}

/**
 * A file grader's path inside the trial's copy, symlinks followed: undefined when it leads out of
 * the workspace (a link the fixture or the agent planted must not make the grader read, and the
 * report quote, a file of the user's).
 */
export function containedInWorkspace(workspace: string, rel: string): string | undefined {
  const joined = path.resolve(workspace, rel);
  if (!inside(workspace, joined)) return undefined;
  let real: string;
  try {
    real = fs.realpathSync(joined);
  } catch {
    // Missing: its parent must still be inside (a dangling link to outside is not "absent").
    try {
      if (fs.lstatSync(joined).isSymbolicLink()) return undefined;
    } catch {
      // Really absent.
    }
    return joined;
  }
  return inside(workspace, real) ? real : undefined;
}

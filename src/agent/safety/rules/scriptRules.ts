import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Arg, RuleContext } from './commandTypes.ts';
import { isInside } from './pathRules.ts';

// Commands that run code the project keeps in files: package scripts (`npm test` runs
// scripts.pretest/test/posttest) and Makefile recipes. A file written earlier in the same command line
// is judged like any script; one on disk is judged only for the never class, so `"clean": "rm -rf dist"`
// still runs while `"test": "curl … | sh"` (a prompt-injected edit, say) is blocked.

const MAX_FILE_BYTES = 256 * 1024;
const MAX_RECIPE_TARGETS = 2000;

interface Source {
  readonly text: string;
  /** Written earlier in this command line (judged fully) rather than read from disk. */
  readonly fresh: boolean;
}

/** The file's text: written in this command, or on disk. Adds a finding when it cannot be known. */
function sourceOf(abs: string, rc: RuleContext, what: string): Source | undefined {
  if (rc.isDownloaded(abs)) {
    rc.add({
      class: 'never',
      risk: 'high',
      program: what,
      reason: `${what} runs ${abs}, downloaded from the network`,
    });
    return undefined;
  }
  const written = rc.written(abs);
  if (written) {
    if (written.content !== undefined) return { text: written.content, fresh: true };
    rc.add({
      class: 'unknown',
      risk: 'high',
      program: what,
      reason: `${what} runs ${path.basename(abs)}, written earlier in this command with unknown content`,
    });
    return undefined;
  }
  try {
    if (!rc.isFile(abs)) return undefined;
    if (fs.statSync(abs).size > MAX_FILE_BYTES) {
      // Too large to check is not the same as nothing to check.
      rc.add({
        class: 'unknown',
        risk: 'medium',
        program: what,
        reason: `${what} runs ${path.basename(abs)}, which is too large to check`,
      });
      return undefined;
    }
    return { text: fs.readFileSync(abs, 'utf8'), fresh: false };
  } catch {
    return undefined;
  }
}

/** The nearest directory at or above `from` (but not above the workspace) holding `name`. */
function findUp(name: string, from: string | undefined, rc: RuleContext): string | undefined {
  let dir = from;
  while (dir !== undefined && isInside(dir, rc.workspaceRoot)) {
    const candidate = path.join(dir, name);
    if (rc.written(candidate) || rc.isFile(candidate)) return candidate;
    const up = path.dirname(dir);
    dir = up === dir ? undefined : up;
  }
  return undefined;
}

const LIFECYCLE: Record<string, string> = {
  t: 'test',
  tst: 'test',
  test: 'test',
  start: 'start',
  stop: 'stop',
  restart: 'restart',
};

/** Which package script a package-manager invocation runs, if any. */
export function scriptName(program: string, sub: string, rest: readonly Arg[]): string | undefined {
  if (/^(run|run-script|rum|urn)$/.test(sub)) return rest.find((a) => !a.value.startsWith('-'))?.value;
  if (program === 'bun' && sub === 'test') return undefined;
  if (LIFECYCLE[sub]) return LIFECYCLE[sub];
  // `yarn build`, `pnpm lint`: a script of that name, when there is one.
  return program === 'yarn' || program === 'pnpm' ? sub : undefined;
}

export function judgePackageScript(manager: string, name: string, rc: RuleContext): void {
  const file = findUp('package.json', rc.cwd, rc);
  if (!file) return;
  const source = sourceOf(file, rc, `${manager} run ${name}`);
  if (!source) return;
  let scripts: Record<string, unknown> = {};
  try {
    const parsed = JSON.parse(source.text) as { scripts?: Record<string, unknown> };
    scripts = parsed.scripts && typeof parsed.scripts === 'object' ? parsed.scripts : {};
  } catch {
    return;
  }
  for (const key of [`pre${name}`, name, `post${name}`]) {
    const script = scripts[key];
    if (typeof script !== 'string') continue;
    rc.withCwd(path.dirname(file)).nested(script, {
      via: `package script "${key}"`,
      ...(source.fresh ? { quiet: true } : { onlyNever: true }),
    });
  }
}

/** A recipe line as shell (`$$` is a literal `$`; leading @, -, + dropped). */
function recipeLine(line: string): string {
  return line
    .slice(1)
    .replace(/^[@+\-\s]+/, '')
    .replace(/\$\$/g, '$');
}

/**
 * The recipes `make goals…` would run: those of the goals (default: the first target) and, recursively,
 * of their prerequisites. A goal with no explicit rule (pattern rules…) falls back to every recipe.
 */
function recipes(text: string, goals: readonly string[]): string[] {
  const rules = new Map<string, { prereqs: string[]; lines: string[] }>();
  let current: { prereqs: string[]; lines: string[] }[] = [];
  let first: string | undefined;
  const all: string[] = [];
  for (const line of text.replace(/\\\n\t?/g, ' ').split('\n')) {
    if (line.startsWith('\t')) {
      const cmd = recipeLine(line);
      if (cmd.trim() === '') continue;
      all.push(cmd);
      for (const rule of current) rule.lines.push(cmd);
      continue;
    }
    const m = /^([^:=#\s][^:=#]*?)\s*::?(?!=)\s*([^=;]*?)\s*(?:;\s*(.*))?$/.exec(line);
    if (!m) {
      if (line.trim() !== '' && !line.startsWith('#')) current = [];
      continue;
    }
    const targets = (m[1] ?? '').split(/\s+/);
    current = targets.map((t) => {
      const rule = rules.get(t) ?? { prereqs: [], lines: [] };
      rule.prereqs.push(...(m[2] ?? '').split(/\s+/).filter((x) => x !== ''));
      if (m[3]) rule.lines.push(m[3]);
      rules.set(t, rule);
      return rule;
    });
    if (m[3]) all.push(m[3]);
    if (first === undefined) first = targets.find((t) => !t.startsWith('.') && !t.includes('%'));
  }
  const wanted = goals.length > 0 ? [...goals] : first ? [first] : [];
  const out: string[] = [];
  const seen = new Set<string>();
  while (wanted.length > 0 && seen.size < MAX_RECIPE_TARGETS) {
    const goal = wanted.shift() as string;
    if (seen.has(goal)) continue;
    seen.add(goal);
    const rule = rules.get(goal);
    if (!rule) {
      if (goals.includes(goal) && !/\.|\//.test(goal)) return all;
      continue;
    }
    out.push(...rule.lines);
    wanted.push(...rule.prereqs);
  }
  return out;
}

export function judgeMakefile(args: readonly Arg[], rc: RuleContext): void {
  let dir = rc.cwd;
  let file: string | undefined;
  const goals: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const v = (args[i] as Arg).value;
    if (v === '-C' || v === '--directory') dir = dir && path.resolve(dir, args[++i]?.value ?? '.');
    else if (/^-(f|-file|-makefile)$/.test(v)) file = args[++i]?.value;
    else if (/^-[jlIWo]$/.test(v)) i++;
    else if (!v.startsWith('-') && !v.includes('=')) goals.push(v);
    else if (/^--(eval|file|makefile)=|^-E$/.test(v)) {
      rc.add({
        class: 'unknown',
        risk: 'high',
        program: 'make',
        reason: 'make runs a makefile given on the command line',
      });
      return;
    }
  }
  if (file === '-' || file === '/dev/stdin') {
    rc.add({ class: 'unknown', risk: 'high', program: 'make', reason: 'make reads its makefile from stdin' });
    return;
  }
  if (dir === undefined) return;
  const candidates = file
    ? [path.resolve(dir, file)]
    : ['GNUmakefile', 'makefile', 'Makefile'].map((n) => path.join(dir as string, n));
  const found = candidates.find((c) => rc.written(c) || rc.isFile(c));
  if (!found) return;
  const source = sourceOf(found, rc, 'make');
  if (!source) return;
  for (const line of recipes(source.text, goals)) {
    rc.withCwd(dir).nested(line, {
      via: 'Makefile recipe',
      ...(source.fresh ? { quiet: true } : { onlyNever: true }),
    });
  }
}

/** A shell script on disk (`bash build.sh`, `./run.sh`, `. env.sh`): judged for the never class. */
export function judgeScriptOnDisk(
  abs: string,
  rc: RuleContext,
  requireShebang: boolean,
  sameShell = false,
): boolean {
  if (rc.written(abs) || rc.isDownloaded(abs)) return true;
  const source = sourceOf(abs, rc, path.basename(abs));
  if (!source || source.text.includes('\0')) return false;
  const shebang = /^#!\s*(?:\S*\/env\s+(?:-S\s+)?)?(\S+)/.exec(source.text)?.[1];
  const shell =
    sameShell || (shebang ? /^((ba|z|da|k|mk)?sh)$/.test(path.basename(shebang)) : !requireShebang);
  if (!shell) return true;
  rc.nested(source.text, { via: `script ${path.basename(abs)}`, onlyNever: true, sameShell });
  return true;
}

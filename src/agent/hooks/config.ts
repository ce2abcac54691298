import * as os from 'node:os';
import * as path from 'node:path';
import { z } from 'zod';
import { lazy } from '../lazy.ts';
import { keelHome } from '../trust/paths.ts';

// Lifecycle hooks in Claude Code's settings format, read from the same files Claude Code reads plus
// Keel's own: `{"hooks": {"PreToolUse": [{"matcher": "Bash|Edit", "hooks": [{"type": "command",
// "command": "…", "timeout": 60}]}]}}`. Each matcher group is validated on its own: a bad group is
// reported with its file and the path of the bad key and skipped, the good ones next to it are kept,
// and nothing here ever throws (a settings file a user is half-way through editing must not stop Keel).

export const HOOK_EVENTS = [
  'SessionStart',
  'UserPromptSubmit',
  'PreToolUse',
  'PostToolUse',
  'Stop',
  'SubagentStop',
  'PreCompact',
  'Notification',
] as const;
export type HookEvent = (typeof HOOK_EVENTS)[number];

/** Claude Code's default per-command timeout. */
export const DEFAULT_HOOK_TIMEOUT_S = 60;
/** A hook may ask for up to 10 minutes, as a Bash call may. */
export const MAX_HOOK_TIMEOUT_S = 600;

export interface HookCommand {
  readonly command: string;
  readonly timeoutMs: number;
}

export interface HookEntry {
  readonly event: HookEvent;
  /** Tool-name matcher (regex or exact; '' and '*' = all), or the event's own subject. */
  readonly matcher: string;
  readonly commands: readonly HookCommand[];
}

export type HookScope = 'user' | 'workspace';

export interface HookSource {
  /** Absolute path of the settings file. */
  readonly file: string;
  /** How the user knows it: workspace-relative for the workspace's, `~/…` for the user's. */
  readonly label: string;
  readonly scope: HookScope;
  readonly entries: readonly HookEntry[];
}

export interface HookConfig {
  readonly sources: readonly HookSource[];
  /** One line per problem: file, path of the bad key, what is wrong. */
  readonly problems: readonly string[];
}

/** Workspace settings files, in the order their hooks run (Claude Code's, then Keel's). */
export const WORKSPACE_HOOK_FILES = [
  '.claude/settings.json',
  '.claude/settings.local.json',
  '.keel/settings.json',
] as const;

const commandSchema = lazy(() =>
  z.strictObject({
    type: z.literal('command'),
    command: z.string().trim().min(1),
    timeout: z.number().positive().max(MAX_HOOK_TIMEOUT_S).optional(),
  }),
);

const groupSchema = lazy(() =>
  z.object({
    matcher: z.string().optional(),
    hooks: z.array(z.unknown()),
  }),
);

const fileSchema = lazy(() =>
  z.object({ hooks: z.record(z.string(), z.unknown()).optional() }).passthrough(),
);

type KeyPath = readonly PropertyKey[];

/** `hooks.PreToolUse[0].hooks[1].command`: where the bad key is, as the user would look for it. */
const joinPath = (parts: KeyPath) =>
  parts.map((p, i) => (typeof p === 'number' ? `[${p}]` : i === 0 ? String(p) : `.${String(p)}`)).join('');

const describeIssues = (label: string, base: KeyPath, error: z.ZodError) =>
  error.issues.map(
    (issue) => `${label}: ${joinPath([...base, ...issue.path]) || '(top level)'}: ${issue.message}`,
  );

/** A matcher that is not a valid regular expression is reported, never guessed at. */
export function matcherProblem(matcher: string): string | undefined {
  if (matcher === '' || matcher === '*') return undefined;
  try {
    new RegExp(matcher);
    return undefined;
  } catch (error) {
    return `not a valid regular expression (${(error as Error).message})`;
  }
}

/** The hook entries of one settings file's text, with what was wrong in it. */
export function parseHookSettings(text: string, label: string): { entries: HookEntry[]; problems: string[] } {
  const problems: string[] = [];
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    return {
      entries: [],
      problems: [`${label}: not valid JSON (${(error as Error).message}); its hooks are not used`],
    };
  }
  const file = fileSchema().safeParse(json);
  if (!file.success) return { entries: [], problems: describeIssues(label, [], file.error) };
  const entries: HookEntry[] = [];
  for (const [event, groups] of Object.entries(file.data.hooks ?? {})) {
    if (!(HOOK_EVENTS as readonly string[]).includes(event)) {
      problems.push(`${label}: hooks.${event}: unknown hook event (known: ${HOOK_EVENTS.join(', ')})`);
      continue;
    }
    if (!Array.isArray(groups)) {
      problems.push(`${label}: hooks.${event}: expected an array of {matcher, hooks} groups`);
      continue;
    }
    groups.forEach((raw, g) => {
      const base = ['hooks', event, g];
      const group = groupSchema().safeParse(raw);
      if (!group.success) {
        problems.push(...describeIssues(label, base, group.error));
        return;
      }
      const matcher = group.data.matcher ?? '';
      const bad = matcherProblem(matcher);
      if (bad) {
        problems.push(`${label}: ${joinPath([...base, 'matcher'])}: ${bad}`);
        return;
      }
      const commands: HookCommand[] = [];
      group.data.hooks.forEach((h, k) => {
        const parsed = commandSchema().safeParse(h);
        if (parsed.success)
          commands.push({
            command: parsed.data.command,
            timeoutMs: Math.round((parsed.data.timeout ?? DEFAULT_HOOK_TIMEOUT_S) * 1000),
          });
        else if ((h as { type?: unknown } | null)?.type === 'prompt')
          problems.push(
            `${label}: ${joinPath([...base, 'hooks', k, 'type'])}: "prompt" hooks are not supported by Keel; skipped`,
          );
        else problems.push(...describeIssues(label, [...base, 'hooks', k], parsed.error));
      });
      if (commands.length) entries.push({ event: event as HookEvent, matcher, commands });
    });
  }
  return { entries, problems };
}

export interface HookFileLocations {
  readonly root: string;
  readonly env?: NodeJS.ProcessEnv;
  /** The user's home (default: os.homedir()). */
  readonly home?: string;
}

/** The settings files hooks come from: the user's first, then the workspace's. */
export function hookFiles(
  options: HookFileLocations,
): Array<{ file: string; label: string; scope: HookScope }> {
  const home = options.home ?? os.homedir();
  const keel = keelHome(options.env);
  const tilde = (f: string) => (f.startsWith(`${home}${path.sep}`) ? `~/${path.relative(home, f)}` : f);
  const workspace = WORKSPACE_HOOK_FILES.map((rel) => path.join(options.root, rel));
  // A user file inside the workspace (the home folder opened as the workspace, KEEL_HOME in it) is
  // one the model's file tools can write: it counts as the workspace's, and needs approval.
  const root = `${path.resolve(options.root)}${path.sep}`;
  const user = [path.join(home, '.claude', 'settings.json'), path.join(keel, 'settings.json')].filter(
    (f) => !path.resolve(f).startsWith(root),
  );
  return [
    ...[...new Set(user)].map((file) => ({ file, label: tilde(file), scope: 'user' as const })),
    ...workspace.map((file) => ({
      file,
      label: path.relative(options.root, file).split(path.sep).join('/'),
      scope: 'workspace' as const,
    })),
  ];
}

/** Every hook the user's and the workspace's settings define (whether allowed to run or not). */
export function loadHookConfig(
  options: HookFileLocations & { readonly readText: (file: string) => string | undefined },
): HookConfig {
  const sources: HookSource[] = [];
  const problems: string[] = [];
  for (const { file, label, scope } of hookFiles(options)) {
    const text = options.readText(file);
    if (text === undefined || !text.trim()) continue;
    const parsed = parseHookSettings(text, label);
    problems.push(...parsed.problems);
    if (parsed.entries.length) sources.push({ file, label, scope, entries: parsed.entries });
  }
  return { sources, problems };
}

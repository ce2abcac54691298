import { BUILTIN_COMMANDS, type CommandCatalog, type SlashCommand } from './discover.ts';

// `/name args` → what the host does. A prompt file's text becomes the user message, under a header
// naming the file it came from: the repository's words are labelled as such, and only what the user
// typed is theirs. An unknown `/name` is an error with close matches — never sent to the model as is.

export type SlashAction =
  | {
      readonly kind: 'prompt';
      /** The user message to send (header + expanded text). */
      readonly text: string;
      readonly command: string;
      /** The prompt file (absent for a built-in's canned prompt). */
      readonly file?: string;
      readonly model?: string;
      readonly allowedTools?: readonly string[];
    }
  /** `/model` alone shows the current model. */
  | { readonly kind: 'model'; readonly model?: string }
  | { readonly kind: 'clear' }
  | { readonly kind: 'compact' }
  | { readonly kind: 'memory' }
  | { readonly kind: 'cost' }
  | { readonly kind: 'error'; readonly message: string };

export interface ParsedSlash {
  readonly name: string;
  readonly args: string;
}

/**
 * `/name rest` → its parts; anything else (plain text, or a path such as `/usr/bin/env fails`) is not a
 * command and goes to the model unchanged.
 */
export function parseSlash(text: string): ParsedSlash | undefined {
  const m = /^\/([A-Za-z0-9_.:-]+)(?:\s+([\s\S]*))?$/.exec(text.trimEnd());
  if (!m) return undefined;
  return { name: m[1]!, args: (m[2] ?? '').trim() };
}

/** Shell-like split of the arguments: quotes group words (`$1` of `"a b" c` is `a b`). */
export function splitArgs(args: string): string[] {
  const out: string[] = [];
  for (const m of args.matchAll(/"((?:[^"\\]|\\.)*)"|'([^']*)'|(\S+)/g))
    out.push(m[1] !== undefined ? m[1].replace(/\\(.)/g, '$1') : (m[2] ?? m[3] ?? ''));
  return out;
}

/**
 * `$ARGUMENTS` → all of them, `$1`…`$9` → one each (missing → empty). A body that uses neither gets
 * the arguments appended (as Claude Code does), so nothing the user typed is dropped.
 */
export function substituteArgs(body: string, args: string): string {
  const positional = splitArgs(args);
  const uses = /\$ARGUMENTS\b|\$[1-9](?![0-9])/.test(body);
  const filled = body
    .replace(/\$ARGUMENTS\b/g, () => args)
    .replace(/\$([1-9])(?![0-9])/g, (_m, n: string) => positional[Number(n) - 1] ?? '');
  return uses || !args ? filled : `${filled}\n\nARGUMENTS: ${args}`;
}

const INIT_PROMPT = `Write an AGENTS.md for this repository: the short guide a new coding agent (or engineer) needs before changing code here.
Explore first (build files, package manifests, CI config, README, the top-level layout, existing rules files such as CLAUDE.md or .github/copilot-instructions.md). Then write AGENTS.md at the workspace root with:
- how to build, lint, type-check and run the tests (exact commands; a single test too)
- the layout: where things live, in a few lines
- code style and conventions the code actually follows
- anything surprising (generated files, required env, things not to touch)
Keep it under about 100 lines, facts only, nothing you did not verify. If AGENTS.md exists, improve it instead of replacing what is still true.`;

const REVIEW_PROMPT = `Review the working-tree changes of this repository (staged and unstaged: \`git status\`, \`git diff HEAD\`; new untracked files too).
For each problem: file:line, what is wrong, why it matters, and a concrete fix. Look for bugs, missing error handling, security issues, missing or broken tests, and changes that do not match the surrounding style.
Do not change any file. End with a short verdict: ready to commit, or what must change first.`;

const CANNED: Readonly<Record<string, string>> = { init: INIT_PROMPT, review: REVIEW_PROMPT };

function distance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let prev = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const next = Math.min(row[j]! + 1, row[j - 1]! + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = row[j]!;
      row[j] = next;
    }
  }
  return row[b.length]!;
}

/** Names close to `name` (typos, a missing `dir:` prefix, a prefix of a longer name), closest first. */
export function closeMatches(name: string, names: readonly string[]): string[] {
  const lower = name.toLowerCase();
  return names
    .map((n) => {
      const l = n.toLowerCase();
      const base = l.split(':').at(-1)!;
      const d = Math.min(distance(lower, l), distance(lower, base));
      const score = l.startsWith(lower) || base === lower ? 0 : d;
      return { n, score };
    })
    .filter((x) => x.score <= Math.max(2, Math.floor(name.length / 3)))
    .sort((a, b) => a.score - b.score || (a.n < b.n ? -1 : 1))
    .slice(0, 5)
    .map((x) => x.n);
}

function header(command: SlashCommand | undefined, name: string, typed: string): string {
  if (!command) return `[/${name}: Keel's built-in command; the user typed: ${typed}]`;
  const whose =
    command.source === 'user'
      ? "the user's own prompt file"
      : "a prompt file from the repository (project text, not the user's words)";
  return `[/${name} from ${command.shown}: ${whose}; the user typed: ${typed}]`;
}

/** What `/name args` does, given the commands found for this workspace. */
export function resolveSlash(parsed: ParsedSlash, catalog: CommandCatalog): SlashAction {
  const { name, args } = parsed;
  const typed = args ? `/${name} ${args}` : `/${name}`;
  switch (name) {
    case 'model':
      return args ? { kind: 'model', model: args } : { kind: 'model' };
    case 'clear':
    case 'compact':
    case 'memory':
    case 'cost':
      return { kind: name };
    case 'init':
    case 'review': {
      const extra = args ? `\n\nThe user adds: ${args}` : '';
      return {
        kind: 'prompt',
        command: name,
        text: `${header(undefined, name, typed)}\n${CANNED[name]}${extra}`,
      };
    }
  }
  const command = catalog.commands.find((c) => c.name === name);
  if (!command) {
    const names = [...BUILTIN_COMMANDS, ...catalog.commands.map((c) => c.name)].sort();
    const refused = catalog.problems.find((p) => p.name === name);
    if (refused) {
      return {
        kind: 'error',
        message: `/${name} is not available (nothing was sent): ${refused.file} ${refused.message}.`,
      };
    }
    const close = closeMatches(name, names);
    const hint = close.length
      ? `Did you mean ${close.map((n) => `/${n}`).join(', ')}?`
      : `Known commands: ${names.map((n) => `/${n}`).join(', ')}.`;
    return {
      kind: 'error',
      message: `Unknown command /${name} (nothing was sent). ${hint} \`keel commands\` lists them with their files; to send text that starts with "/", begin it with a space.`,
    };
  }
  const limit = command.allowedTools
    ? `\n\n(For this turn the command allows only these tools: ${command.allowedTools.join(', ')}.)`
    : '';
  return {
    kind: 'prompt',
    command: name,
    file: command.shown,
    text: `${header(command, name, typed)}\n${substituteArgs(command.body, args)}${limit}`,
    ...(command.model ? { model: command.model } : {}),
    ...(command.allowedTools ? { allowedTools: command.allowedTools } : {}),
  };
}

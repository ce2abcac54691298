import * as os from 'node:os';
import * as path from 'node:path';
import { keelHome } from '../trust/paths.ts';
import {
  commandFrontmatter,
  type FileSource,
  LINKS_OUTSIDE,
  markdownFiles,
  readFileText,
  readMarkdownFile,
  zodProblem,
} from './promptFile.ts';

// Slash commands from prompt files, in the places the peers keep them. A prompt file is text: it
// needs no approval, is labelled with its file when used, and can only NARROW what a turn may do
// (its `allowed-tools` restricts; it never pre-approves anything, unlike Claude Code's meaning).

export interface SlashCommand {
  /** Without the slash; sub-folders of `.claude/commands` give `dir:name` (Claude Code's namespacing). */
  readonly name: string;
  readonly description: string;
  readonly argumentHint?: string;
  /** Tool names (optionally `Name(pattern)`) the turn is limited to; absent = no limit. */
  readonly allowedTools?: readonly string[];
  readonly model?: string;
  readonly body: string;
  /** Absolute path of the file. */
  readonly file: string;
  /** How the file is shown: workspace-relative, or `~/…` for user-level files. */
  readonly shown: string;
  readonly source: FileSource;
}

export interface CommandProblem {
  readonly file: string;
  readonly message: string;
  /** The command name the file would have given, when the file was refused for that name. */
  readonly name?: string;
}

export interface CommandCatalog {
  /** One per name, sorted by name. */
  readonly commands: readonly SlashCommand[];
  readonly problems: readonly CommandProblem[];
}

export interface CommandDiscoveryOptions {
  readonly workspaceRoot: string;
  /** User-level folders (first wins); default `~/.keel/commands` (KEEL_HOME) then `~/.claude/commands`. */
  readonly userDirs?: readonly string[];
  readonly env?: NodeJS.ProcessEnv;
}

interface Place {
  readonly dir: string;
  readonly suffix: string;
  readonly recursive: boolean;
  readonly source: FileSource;
}

export function defaultUserCommandDirs(env: NodeJS.ProcessEnv = process.env): string[] {
  const home = env.HOME?.trim() || os.homedir();
  return [path.join(keelHome(env), 'commands'), path.join(home, '.claude', 'commands')];
}

/** `~/…` for files under the home folder, workspace-relative inside it. */
export function shownPath(file: string, workspaceRoot: string, env: NodeJS.ProcessEnv = process.env): string {
  const rel = path.relative(workspaceRoot, file);
  if (rel && !rel.startsWith('..') && !path.isAbsolute(rel)) return rel.split(path.sep).join('/');
  const home = env.HOME?.trim() || os.homedir();
  const fromHome = path.relative(home, file);
  return fromHome && !fromHome.startsWith('..') ? `~/${fromHome.split(path.sep).join('/')}` : file;
}

/** Built-in names no file may take (the file is reported, not used). */
export const BUILTIN_COMMANDS = ['clear', 'compact', 'cost', 'init', 'memory', 'model', 'review'] as const;

export function discoverCommands(options: CommandDiscoveryOptions): CommandCatalog {
  const env = options.env ?? process.env;
  const root = options.workspaceRoot;
  // The user's own folders come first: a repository must not be able to shadow a command the user
  // wrote for themselves (their `/deploy` would silently become the repository's text).
  const places: Place[] = [
    ...(options.userDirs ?? defaultUserCommandDirs(env)).map(
      (dir): Place => ({ dir, suffix: '.md', recursive: true, source: 'user' }),
    ),
    { dir: path.join(root, '.keel', 'commands'), suffix: '.md', recursive: true, source: 'workspace' },
    { dir: path.join(root, '.claude', 'commands'), suffix: '.md', recursive: true, source: 'workspace' },
    {
      dir: path.join(root, '.github', 'prompts'),
      suffix: '.prompt.md',
      recursive: false,
      source: 'workspace',
    },
  ];
  const byName = new Map<string, SlashCommand>();
  const problems: CommandProblem[] = [];
  for (const place of places) {
    const confine = place.source === 'workspace' ? root : undefined;
    for (const { rel, real } of markdownFiles(place.dir, place.suffix, place.recursive, confine)) {
      const file = path.join(place.dir, rel);
      const shown = shownPath(file, root, env);
      const name = rel.slice(0, -place.suffix.length).split('/').join(':');
      if (real === undefined) {
        problems.push({ file: shown, message: LINKS_OUTSIDE, name });
        continue;
      }
      if (!/^[A-Za-z0-9_.:-]+$/.test(name)) {
        problems.push({
          file: shown,
          message: `"${name}" is not a usable command name (letters, digits, - _ . :)`,
        });
        continue;
      }
      if ((BUILTIN_COMMANDS as readonly string[]).includes(name)) {
        problems.push({ file: shown, message: `/${name} is a built-in command; this file is not used` });
        continue;
      }
      const earlier = byName.get(name);
      if (earlier) {
        problems.push({
          file: shown,
          message: `/${name} is already defined by ${earlier.shown}; this file is not used`,
        });
        continue;
      }
      const read = readMarkdownFile(readFileText(real) ?? '');
      if (!read.ok) {
        problems.push({ file: shown, message: read.error });
        continue;
      }
      const fm = commandFrontmatter.safeParse(read.file.data);
      if (!fm.success) {
        problems.push({ file: shown, message: zodProblem(fm.error) });
        continue;
      }
      const body = read.file.body.trim();
      if (!body) {
        problems.push({ file: shown, message: 'the prompt file is empty' });
        continue;
      }
      const allowed = fm.data['allowed-tools'] ?? fm.data.tools;
      const firstLine = body.split('\n').find((l) => l.trim() && !l.startsWith('#')) ?? body;
      byName.set(name, {
        name,
        description: fm.data.description || firstLine.trim().slice(0, 100),
        ...(fm.data['argument-hint'] ? { argumentHint: fm.data['argument-hint'] } : {}),
        ...(allowed && allowed.length > 0 ? { allowedTools: allowed } : {}),
        ...(fm.data.model ? { model: fm.data.model } : {}),
        body,
        file,
        shown,
        source: place.source,
      });
    }
  }
  const commands = [...byName.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return { commands, problems };
}

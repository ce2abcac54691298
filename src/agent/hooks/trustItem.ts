import * as fs from 'node:fs';
import * as path from 'node:path';
import { canonicalJson } from '../safety/guards/loopDetector.ts';
import { sha256 } from '../trust/ledger.ts';
import type { SteeringItem } from '../trust/items.ts';
import { type HookConfig, type HookSource, loadHookConfig } from './config.ts';

// The workspace's hooks as one item of the trust room. Threat: a cloned repository ships
// `.claude/settings.json` hooks that run on SessionStart and exfiltrate; or the user approves a
// harmless `check.sh` and the repository (a later pull, a command, the model) edits it afterwards.
// So the approval's hash covers the hook configuration AND the content of every workspace file the
// commands name (`.claude/hooks/check.sh`, `"$CLAUDE_PROJECT_DIR"/scripts/x.py`, `node tools/lint.js`)
// plus everything under the conventional hook folders (a script there may source another): editing
// any of it is a new question. The hash is checked again right before every run, not only at start.

/** Folders whose every file is covered (scripts there call each other). */
export const HOOK_SCRIPT_DIRS = ['.claude/hooks', '.keel/hooks'] as const;
const MAX_COVERED_FILES = 200;

/** Words of a command line, quotes removed; `$CLAUDE_PROJECT_DIR` (any spelling) becomes the root. */
function commandWords(command: string, root: string): string[] {
  const expanded = command.replace(/\$\{?(?:CLAUDE_PROJECT_DIR|KEEL_PROJECT_DIR)\}?/g, root);
  const words: string[] = [];
  let word = '';
  let quote: '"' | "'" | undefined;
  for (const ch of expanded) {
    if (quote) {
      if (ch === quote) quote = undefined;
      else word += ch;
    } else if (ch === '"' || ch === "'") quote = ch;
    else if (/[\s;|&()<>`]/.test(ch)) {
      if (word) words.push(word);
      word = '';
    } else word += ch;
  }
  if (word) words.push(word);
  // `FOO=./x.sh` and `--config=tools/x.json` name a file after the `=`.
  return words.flatMap((w) => (w.includes('=') ? [w, w.slice(w.indexOf('=') + 1)] : [w]));
}

const isFileInside = (file: string, root: string): string | undefined => {
  try {
    const real = fs.realpathSync(file);
    const realRoot = fs.realpathSync(root);
    if (!real.startsWith(`${realRoot}${path.sep}`) || !fs.statSync(real).isFile()) return undefined;
    return path.relative(realRoot, real).split(path.sep).join('/');
  } catch {
    return undefined;
  }
};

function filesUnder(dir: string, root: string, out: Set<string>): void {
  let entries: fs.Dirent[];
  try {
    entries = fs.readdirSync(dir, { withFileTypes: true });
  } catch {
    return;
  }
  for (const e of entries.sort((a, b) => (a.name < b.name ? -1 : 1))) {
    if (out.size >= MAX_COVERED_FILES) return;
    const full = path.join(dir, e.name);
    if (e.isDirectory()) filesUnder(full, root, out);
    else {
      const rel = isFileInside(full, root);
      if (rel) out.add(rel);
    }
  }
}

/** Workspace-relative files the workspace's hook commands would run or read, sorted. */
export function referencedFiles(sources: readonly HookSource[], root: string): string[] {
  const found = new Set<string>();
  for (const source of sources)
    for (const entry of source.entries)
      for (const { command } of entry.commands)
        for (const word of commandWords(command, root)) {
          if (!word || word.startsWith('-') || word.startsWith('$')) continue;
          const rel = isFileInside(path.resolve(root, word), root);
          if (rel) found.add(rel);
        }
  for (const dir of HOOK_SCRIPT_DIRS) filesUnder(path.join(root, dir), root, found);
  return [...found].sort();
}

const readBytes = (file: string) => {
  try {
    return fs.readFileSync(file);
  } catch {
    return undefined;
  }
};

/** The hash an approval of the workspace's hooks is bound to. */
export function workspaceHooksHash(sources: readonly HookSource[], root: string): string {
  const config = sources.map((s) => ({ file: s.label, entries: s.entries }));
  const files = referencedFiles(sources, root).map((rel) => {
    const bytes = readBytes(path.join(root, rel));
    return { file: rel, sha256: bytes ? sha256(bytes) : 'missing' };
  });
  return sha256(canonicalJson({ config, files }));
}

export const HOOKS_ITEM_ID = 'hooks:workspace';

const readText = (file: string): string | undefined => {
  try {
    return fs.lstatSync(file).isFile() ? fs.readFileSync(file, 'utf8') : undefined;
  } catch {
    return undefined;
  }
};

/** The workspace's own hook sources (the user's are not the repository's and need no approval). */
export function workspaceHookSources(root: string, config?: HookConfig): HookSource[] {
  const loaded = config ?? loadHookConfig({ root, readText });
  return loaded.sources.filter((s) => s.scope === 'workspace');
}

/** The trust room's item for the workspace's hooks, when it defines any. */
export function workspaceHooksItem(root: string, config?: HookConfig): SteeringItem | undefined {
  const sources = workspaceHookSources(root, config);
  if (sources.length === 0) return undefined;
  const grants: string[] = [];
  for (const s of sources)
    for (const e of s.entries)
      for (const c of e.commands)
        grants.push(
          `runs \`${c.command.slice(0, 160)}\` on ${e.event}${e.matcher && e.matcher !== '*' ? ` (${e.matcher})` : ''}, sandboxed, timeout ${Math.round(c.timeoutMs / 1000)} s (${s.label})`,
        );
  const files = referencedFiles(sources, root);
  if (files.length)
    grants.push(
      `covers the scripts it runs: ${files.slice(0, 8).join(', ')}${files.length > 8 ? ', …' : ''}`,
    );
  grants.push(
    'its hooks can block tool calls and prompts, rewrite tool inputs, and add text to the model context',
  );
  return {
    id: HOOKS_ITEM_ID,
    kind: 'hooks',
    file: sources.map((s) => s.label).join(', '),
    title: `Hooks in ${sources.map((s) => s.label).join(', ')}`,
    grants,
    hash: workspaceHooksHash(sources, root),
  };
}

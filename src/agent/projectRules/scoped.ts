import * as path from 'node:path';
import type { ContextEngine } from '../context/engineTypes.ts';
import type { AgentMessage, ReminderMessage } from '../messages.ts';
import type { PathGuard } from '../safety/paths/pathGuard.ts';
import { readRuleFile } from './readRuleFile.ts';
import { defuseRuleText, formatSize, MAX_RULE_FILE_CHARS, ruleLabel } from './render.ts';
import type { RuleFile, RuleSourceName } from './sources.ts';

// Path-scoped rules (Copilot `applyTo`, Cursor `globs`, AGENTS.md / CLAUDE.md in subfolders) never enter the frozen
// prefix (P1). When a tool call succeeds on a matching path, the rule is appended once per session
// as a reminder at the end of the conversation, where new information goes (P2): after everything
// the previous call cached, before the next model call. A resumed session sees which rules its
// transcript already holds (the reminders' source), so none is offered twice. A reminder a compaction
// summarised away is no longer in the context: its rule is offered again at the next matching touch.

export const SCOPED_RULE_SOURCE_PREFIX = 'project-rules:';

/** Tools whose `path` names a file the agent works on. */
const FILE_TOOLS = new Set(['Read', 'Write', 'Edit', 'MultiEdit']);
/** Tools whose `path` names a folder it looks into (only nested AGENTS.md / CLAUDE.md apply to those). */
const FOLDER_TOOLS = new Set(['LS', 'Grep', 'Glob']);

export interface ScopedRulesOptions {
  /** Rules discovered at session start with a `globs` scope. */
  readonly rules: readonly RuleFile[];
  /**
   * File names looked for in the folders above a touched path, each with its source (AGENTS.md when
   * `agents` is on, CLAUDE.md when `claude` is): they apply to their subtree.
   */
  readonly nested: readonly NestedRuleName[];
  readonly guard: PathGuard;
}

export interface NestedRuleName {
  readonly file: 'AGENTS.md' | 'CLAUDE.md';
  readonly source: RuleSourceName;
}

export interface ScopedRules {
  /** Reminders for rules the transcript's new tool calls made relevant, each at most once a session. */
  offers(transcript: readonly AgentMessage[], now: number, newId: () => string): Promise<ReminderMessage[]>;
}

interface Touch {
  readonly rel: string;
  readonly folder: boolean;
}

type Matcher = (rel: string) => boolean;

export function createScopedRules(options: ScopedRulesOptions): ScopedRules {
  /** Rule file → id of the reminder that carries it in the conversation. */
  const offered = new Map<string, string>();
  /** Nested rules files already looked for (found or not), by path: each is read at most once. */
  const nestedByRel = new Map<string, RuleFile | undefined>();
  const calls = new Map<string, { name: string; input: Record<string, unknown> }>();
  let scanned = 0;
  let matchers: Promise<Map<RuleFile, Matcher>> | undefined;
  // picomatch loads with the first touched file, not at session start (as fast-glob does for Glob).
  const loadMatchers = () => {
    matchers ??= import('picomatch').then(({ default: picomatch }) => {
      const map = new Map<RuleFile, Matcher>();
      for (const rule of options.rules) {
        if (rule.scope.kind !== 'globs') continue;
        map.set(rule, picomatch(rule.scope.globs, { dot: true, basename: true }));
      }
      return map;
    });
    return matchers;
  };

  const relOf = (input: unknown): string | undefined => {
    if (typeof input !== 'string' || input.length === 0) return undefined;
    const resolved = options.guard.resolve(input);
    if (!resolved.ok) return undefined;
    const rel = options.guard.display(resolved.path);
    if (path.isAbsolute(rel) || rel.startsWith('..')) return undefined; // the state dir, not the repo
    return rel.split(path.sep).join('/');
  };

  const newTouches = (transcript: readonly AgentMessage[]): Touch[] => {
    const touches: Touch[] = [];
    for (; scanned < transcript.length; scanned++) {
      const message = transcript[scanned]!;
      if (message.role === 'reminder' && message.source.startsWith(SCOPED_RULE_SOURCE_PREFIX)) {
        offered.set(message.source.slice(SCOPED_RULE_SOURCE_PREFIX.length), message.id);
      } else if (message.role === 'summary') {
        const gone = new Set(message.replaces);
        for (const [rel, id] of offered) if (gone.has(id)) offered.delete(rel);
      } else if (message.role === 'assistant') {
        for (const block of message.content) {
          if (block.type === 'tool_use') calls.set(block.id, { name: block.name, input: block.input });
        }
      } else if (message.role === 'tool_result' && !message.isError) {
        const call = calls.get(message.toolUseId);
        if (!call) continue;
        const folder = FOLDER_TOOLS.has(call.name);
        if (!folder && !FILE_TOOLS.has(call.name)) continue;
        const rel = relOf(call.input.path ?? (folder ? '.' : undefined));
        if (rel) touches.push({ rel, folder });
      }
    }
    return touches;
  };

  const readNested = (dir: string, name: NestedRuleName): RuleFile | undefined => {
    const rel = `${dir}/${name.file}`;
    const read = readRuleFile(options.guard, rel);
    if (!read.ok) return undefined;
    const text = read.text.replace(/\r\n/g, '\n').trim();
    if (text.length === 0 && read.complete) return undefined;
    return {
      source: name.source,
      rel,
      size: read.size,
      text,
      complete: read.complete,
      scope: { kind: 'subtree', dir },
    };
  };

  /** Nested rules files in the folders from the root down to the touched path (the root's are in the prefix). */
  const nestedFor = (touch: Touch): RuleFile[] => {
    const parts = touch.rel === '.' ? [] : touch.rel.split('/');
    const dirs = touch.folder ? parts : parts.slice(0, -1);
    const found: RuleFile[] = [];
    for (let depth = 1; depth <= dirs.length; depth++) {
      const dir = dirs.slice(0, depth).join('/');
      for (const name of options.nested) {
        const rel = `${dir}/${name.file}`;
        if (!nestedByRel.has(rel)) nestedByRel.set(rel, readNested(dir, name));
        const rule = nestedByRel.get(rel);
        if (rule) found.push(rule);
      }
    }
    return found;
  };

  return {
    async offers(transcript, now, newId) {
      const touches = newTouches(transcript);
      if (touches.length === 0) return [];
      const due: { rule: RuleFile; touched: string; id: string }[] = [];
      const take = (rule: RuleFile, touched: string) => {
        if (offered.has(rule.rel) || touched === rule.rel) return;
        const id = newId();
        offered.set(rule.rel, id);
        due.push({ rule, touched, id });
      };
      const files = touches.filter((t) => !t.folder);
      if (files.length > 0 && options.rules.some((r) => r.scope.kind === 'globs')) {
        const map = await loadMatchers();
        for (const touch of files) {
          for (const [rule, matches] of map) if (matches(touch.rel)) take(rule, touch.rel);
        }
      }
      if (options.nested.length > 0) {
        for (const touch of touches) for (const rule of nestedFor(touch)) take(rule, touch.rel);
      }
      return due.map(({ rule, touched, id }) => ({
        role: 'reminder',
        id,
        ts: now,
        source: `${SCOPED_RULE_SOURCE_PREFIX}${rule.rel}`,
        text: scopedReminderText(rule, touched),
      }));
    },
  };
}

export function scopedReminderText(rule: RuleFile, touched: string): string {
  const scope =
    rule.scope.kind === 'globs'
      ? `files matching ${rule.scope.globs.join(', ')}`
      : rule.scope.kind === 'subtree'
        ? `everything under ${rule.scope.dir}/`
        : 'this workspace';
  const head = `${ruleLabel(rule.rel)}\nThese rules apply to ${scope}, which includes ${touched}.`;
  if (!rule.complete || rule.text.length > MAX_RULE_FILE_CHARS) {
    return `${head}\nThe file is ${formatSize(rule.size)}: Read ${rule.rel} before changing files it covers.`;
  }
  return `${head}\n${defuseRuleText(rule.text)}`;
}

/** The engine, with due path-scoped rules appended to the conversation before each call is prepared. */
export function withScopedRules(
  engine: ContextEngine,
  scoped: ScopedRules,
  newId: () => string,
): ContextEngine {
  return {
    ...engine,
    skillInContext: (name) => engine.skillInContext(name),
    afterTools: (transcript) => engine.afterTools(transcript),
    prepare: async (args) => {
      const notes = await scoped.offers(args.transcript, args.now, newId);
      if (notes.length === 0) return engine.prepare(args);
      const prepared = await engine.prepare({ ...args, transcript: [...args.transcript, ...notes] });
      return { request: prepared.request, appended: [...notes, ...prepared.appended] };
    },
  };
}

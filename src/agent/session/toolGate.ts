import { fail, renderForModel } from '../tools/protocol.ts';
import type { ExecutedCall, ToolRegistry } from '../tools/registry.ts';

// Narrowing which tools a turn or an agent may use WITHOUT changing the frozen tool list (P1): the
// call is refused with a clear error instead. Limits only ever narrow: they come from workspace text
// (a prompt file's `allowed-tools`, an agent file's `tools`), and what is allowed still goes through
// the approval policy like any other call — a listed tool is never pre-approved.

export interface ToolLimit {
  /** Tool names, optionally `Name(pattern)`: `Bash(git status:*)`, `Read(src/**)`. */
  readonly allowed: readonly string[];
  /** Who set the limit, for the refusal: `the /review-pr command (.claude/commands/review-pr.md)`. */
  readonly by: string;
}

function globToRegExp(glob: string): RegExp {
  let re = '';
  for (let i = 0; i < glob.length; i++) {
    const ch = glob[i]!;
    if (ch === '*' && glob[i + 1] === '*') {
      re += '.*';
      i++;
    } else if (ch === '*') re += '[^/]*';
    else re += ch.replace(/[.+?^${}()|[\]\\]/g, '\\$&');
  }
  return new RegExp(`^${re}$`);
}

/** Whether one allowed-tools entry admits this call. */
export function specAdmits(spec: string, name: string, input: unknown): boolean {
  const m = /^([^()]+)(?:\((.*)\))?$/.exec(spec.trim());
  if (!m || m[1]!.trim() !== name) return false;
  const pattern = m[2]?.trim();
  if (!pattern || pattern === '*') return true;
  const fields = (input ?? {}) as Record<string, unknown>;
  if (name === 'Bash') {
    const command = typeof fields.command === 'string' ? fields.command.trim() : '';
    // Claude Code's `git status:*` = the command `git status` with any arguments.
    const prefix = pattern.replace(/:\*$/, '').replace(/\s*\*$/, '');
    if (prefix === pattern) return command === pattern;
    // A chained or substituted command is more than the prefix allows.
    if (/[;&|`\n]|\$\(/.test(command)) return false;
    return command === prefix || command.startsWith(`${prefix} `);
  }
  const target = [fields.path, fields.file_path, fields.pattern].find((v) => typeof v === 'string');
  return typeof target === 'string' && globToRegExp(pattern).test(target.replace(/^\.\//, ''));
}

export function limitAdmits(limit: ToolLimit, name: string, input: unknown): boolean {
  return limit.allowed.some((spec) => specAdmits(spec, name, input));
}

/** The names a limit mentions (for filtering an offered tool set). */
export function limitNames(limit: ToolLimit): Set<string> {
  return new Set(limit.allowed.map((s) => s.replace(/\(.*$/, '').trim()));
}

function refusal(limit: ToolLimit, name: string): ExecutedCall {
  const result = fail(
    'BLOCKED_BY_POLICY',
    `${name} is not allowed here: ${limit.by} allows only ${limit.allowed.join(', ')}.`,
    'Use one of the allowed tools, or finish and tell the user what you would need.',
  );
  return { result, content: renderForModel(result) };
}

/**
 * The registry with the limits `current()` returns applied on every call: the session's fixed one
 * (its agent's) and this turn's (a slash command's). The tool list sent to the model is unchanged.
 */
export function gateRegistry(registry: ToolRegistry, current: () => readonly ToolLimit[]): ToolRegistry {
  const blocked = (name: string, input: unknown) => current().find((l) => !limitAdmits(l, name, input));
  return {
    get tools() {
      return registry.tools;
    },
    get apiTools() {
      return registry.apiTools;
    },
    get: (name) => registry.get(name),
    execute(name, input, context) {
      const limit = blocked(name, input);
      return limit ? Promise.resolve(refusal(limit, name)) : registry.execute(name, input, context);
    },
    begin(name, input, context) {
      const limit = blocked(name, input);
      if (!limit) return registry.begin(name, input, context);
      const call = refusal(limit, name);
      return { ran: Promise.resolve(), commit: async () => call, discard: async () => {} };
    },
  };
}

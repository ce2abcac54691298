import * as path from 'node:path';
import { refusal } from '../safety/approvals.ts';
import { canonicalJson } from '../safety/guards/loopDetector.ts';
import {
  type AnyToolDefinition,
  fail,
  type ToolContext,
  type ToolDefinition,
  type ToolResult,
} from '../tools/protocol.ts';
import type { HookVerdict } from './contract.ts';
import { hookToolName } from './matcher.ts';
import type { HookRunner } from './runner.ts';

// PreToolUse / PostToolUse (and SubagentStop after a Task) around a tool's execute. The wrapper is
// the outermost layer, so whatever a hook does still passes every check inside: an `updatedInput` is
// validated by the tool's schema again and then judged by the same command policy, path guard and
// approvals as the model's own input (threat: a hook used to smuggle `curl … | sh` past the policy —
// it cannot, the Bash tool classifies what it is actually given). A hook's `allow` never skips
// Keel's own questions: approvals are the user's, not a script's. What a hook says to the model is
// appended to the tool result — the newest message, after the last cache breakpoint — so the
// prompt prefix never moves (P1).

export interface ToolHookDeps {
  readonly hooks: HookRunner;
  /** Non-blocking problems and systemMessages, for the user. */
  readonly notice: (text: string) => void;
  /** A hook answered `continue: false`: the run ends, with this reason for the user. */
  readonly stopRun: (reason: string) => void;
}

const HOOK_SUGGESTION =
  "Do not retry the same call unchanged: follow the hook's message, or tell the user what you needed and why.";

/** Text a hook adds for the model, labelled with where it came from. */
const hookBlock = (kind: 'feedback' | 'context', event: string, text: string) =>
  `\n\n<hook-${kind} event="${event}">\n${text.replace(/<\/?hook-(feedback|context)/gi, '&lt;hook-$1')}\n</hook-${kind}>`;

/** `text` appended to what the model reads of `result` (the message of an error, the text otherwise). */
export function appendForModel(result: ToolResult, text: string): ToolResult {
  if (!text) return result;
  return {
    ...result,
    text: result.text + text,
    ...(result.status === 'error' && result.error
      ? { error: { ...result.error, message: result.error.message + text } }
      : {}),
  };
}

function report(deps: ToolHookDeps, verdict: HookVerdict): void {
  for (const n of verdict.notices ?? []) deps.notice(n);
  if (verdict.stop !== undefined) deps.stopRun(verdict.stop);
}

/** Keel's file tools take `path`; Claude Code's (and the hook scripts written for it) `file_path`. */
const FILE_TOOLS = new Set(['Read', 'Write', 'Edit', 'MultiEdit']);

/** The tool input as a hook sees it: Keel's fields, plus Claude Code's `file_path` (absolute). */
export function hookToolInput(name: string, input: unknown, root: string): unknown {
  if (!FILE_TOOLS.has(name) || typeof input !== 'object' || input === null) return input;
  const p = (input as { path?: unknown }).path;
  return typeof p === 'string' ? { ...input, file_path: path.resolve(root, p) } : input;
}

/** A hook's `updatedInput` in Keel's fields (a Claude Code hook may send `file_path`). */
export function fromHookInput(name: string, updated: Record<string, unknown>): Record<string, unknown> {
  if (!FILE_TOOLS.has(name) || typeof updated.file_path !== 'string') return updated;
  const { file_path, ...rest } = updated;
  return { ...rest, path: file_path };
}

async function askUser(name: string, input: unknown, ctx: ToolContext): Promise<boolean> {
  const shown = canonicalJson(input).slice(0, 2000);
  const detail = `${name} ${shown}\n\nA PreToolUse hook asks you to confirm this call.`;
  ctx.audit({ type: 'approval_request', tool: name, kind: 'other', reason: 'PreToolUse hook asked' });
  const decision = await ctx.host.approvals.ask(
    {
      kind: 'other',
      title: `Hook asks: allow ${name}?`,
      detail,
      risk: 'medium',
      once: true,
      message: { id: 'hook_confirm', tool: name, input: shown },
    },
    ctx.signal,
  );
  ctx.audit({
    type: 'approval_decision',
    tool: name,
    kind: 'other',
    decision,
    detail: 'PreToolUse hook asked',
  });
  return decision !== 'deny';
}

async function before(
  tool: AnyToolDefinition,
  input: unknown,
  ctx: ToolContext,
  deps: ToolHookDeps,
): Promise<{ input: unknown; note: string } | { refused: ToolResult }> {
  const name = hookToolName(tool.name, input);
  const root = ctx.host.workspace.roots[0] ?? '';
  const shown = hookToolInput(tool.name, input, root);
  const v = await deps.hooks.run('PreToolUse', name, { tool_name: name, tool_input: shown }, ctx.signal);
  report(deps, v);
  if (v.stop !== undefined)
    return { refused: fail('ABORTED', `A PreToolUse hook ended the run: ${v.stop}`, 'Wait for the user.') };
  if (v.block !== undefined)
    return {
      refused: fail('BLOCKED_BY_POLICY', `Blocked by a PreToolUse hook:\n${v.block}`, HOOK_SUGGESTION),
    };
  if (v.permission === 'ask' && !(await askUser(name, v.updatedInput ?? input, ctx)))
    return {
      refused: fail('DENIED_BY_USER', refusal(ctx.host.approvals, `${name} (a hook asked)`), HOOK_SUGGESTION),
    };
  let next = input;
  let note = '';
  if (v.updatedInput) {
    const parsed = tool.inputSchema.safeParse(fromHookInput(tool.name, v.updatedInput));
    if (!parsed.success)
      return {
        refused: fail(
          'INVALID_PARAM',
          `A PreToolUse hook rewrote the input of ${name} into something invalid (${parsed.error.issues[0]?.message ?? 'schema mismatch'}); not run.`,
          'Tell the user the hook is misconfigured.',
        ),
      };
    next = parsed.data;
    note = hookBlock(
      'feedback',
      'PreToolUse',
      `A hook changed this call's input to: ${canonicalJson(next).slice(0, 2000)}`,
    );
  }
  if (v.context) note += hookBlock('context', 'PreToolUse', v.context);
  return { input: next, note };
}

async function after(
  tool: AnyToolDefinition,
  input: unknown,
  result: ToolResult,
  ctx: ToolContext,
  deps: ToolHookDeps,
): Promise<ToolResult> {
  const name = hookToolName(tool.name, input);
  let out = result;
  if (deps.hooks.has('PostToolUse')) {
    const response = {
      status: result.status,
      text: result.text,
      data: result.data,
      ...(result.error ? { error: result.error } : {}),
    };
    const v = await deps.hooks.run(
      'PostToolUse',
      name,
      {
        tool_name: name,
        tool_input: hookToolInput(tool.name, input, ctx.host.workspace.roots[0] ?? ''),
        tool_response: response,
      },
      ctx.signal,
    );
    report(deps, v);
    if (v.block !== undefined) out = appendForModel(out, hookBlock('feedback', 'PostToolUse', v.block));
    if (v.context) out = appendForModel(out, hookBlock('context', 'PostToolUse', v.context));
  }
  if (tool.name === 'Task' && deps.hooks.has('SubagentStop')) {
    // Keel's sub-agent has already answered: a block is passed to the parent as feedback on the answer.
    const v = await deps.hooks.run('SubagentStop', undefined, { stop_hook_active: false }, ctx.signal);
    report(deps, v);
    if (v.block !== undefined) out = appendForModel(out, hookBlock('feedback', 'SubagentStop', v.block));
  }
  return out;
}

/** `tool` with the session's tool hooks around it (itself when no tool hook is configured). */
export function withToolHooks(tool: AnyToolDefinition, deps: ToolHookDeps): AnyToolDefinition {
  const { hooks } = deps;
  if (
    !hooks.has('PreToolUse') &&
    !hooks.has('PostToolUse') &&
    !(tool.name === 'Task' && hooks.has('SubagentStop'))
  )
    return tool;
  const inner = tool as unknown as ToolDefinition<unknown>;
  const wrapped: ToolDefinition<unknown> = {
    ...inner,
    async execute(input, ctx) {
      let run = input;
      let note = '';
      if (hooks.has('PreToolUse')) {
        const pre = await before(tool, input, ctx, deps);
        if ('refused' in pre) return pre.refused;
        run = pre.input;
        note = pre.note;
      }
      const result = appendForModel(await inner.execute(run, ctx), note);
      return after(tool, run, result, ctx, deps);
    },
  };
  // The schema getter of the inner tool is read lazily (P1: same JSON Schema, built once).
  Object.defineProperty(wrapped, 'inputSchema', { get: () => tool.inputSchema, enumerable: true });
  return wrapped as unknown as AnyToolDefinition;
}

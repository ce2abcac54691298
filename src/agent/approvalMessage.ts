import { z } from 'zod';

// An approval question in a structured form, next to its English title and detail (which the CLI
// shows and the audit log keeps): which question it is, and the values it names. A host with a
// display language (the extension: vscode.l10n) renders it from its own templates; the values stay
// verbatim inside them, untranslated (a command, a path, a diff, the policy's reason are the user's
// and the repository's words, and must be shown exactly). Nothing here reaches the model.

const text = z.string().max(1_000_000);

export const approvalMessageSchema = z.discriminatedUnion('id', [
  /** The command policy asks about a Bash command (tools/bashApproval.ts). */
  z
    .object({
      id: z.literal('command'),
      kind: z.enum(['command', 'network', 'destructive']),
      /** The model's description of the command, or its first line. */
      summary: text,
      command: text,
      reason: text,
      /** `--approve auto`: why the classifier passed it on to a person. */
      escalated: text.optional(),
    })
    .strict(),
  /** One command, unconfined by the OS sandbox (tools/bashApproval.ts). */
  z.object({ id: z.literal('outside_sandbox'), command: text, policyReason: text.optional() }).strict(),
  /** A command the long-task harness runs itself (task/commands.ts). */
  z
    .object({
      id: z.literal('task_command'),
      purpose: z.enum(['init', 'reverify']),
      /** The feature being re-verified; the init script's name for `init`. */
      subject: text,
      command: text,
      reason: text,
    })
    .strict(),
  /** Writing a protected file (tools/editing/gate.ts). */
  z
    .object({
      id: z.literal('protected_write'),
      action: z.enum(['create', 'modify']),
      tool: text,
      path: text,
      why: text,
    })
    .strict(),
  /** Calling an MCP server's tool (tools/mcpCall.ts). */
  z
    .object({
      id: z.literal('mcp_call'),
      tool: text,
      readOnlyHint: z.boolean(),
      arguments: text,
    })
    .strict(),
  /** Saving text that came from a tool result to the workspace's memory (tools/memory.ts). */
  z.object({ id: z.literal('memory_tool_output'), entry: text }).strict(),
  /** A change to the user's memory, which reaches every project (tools/memory.ts). */
  z
    .object({
      id: z.literal('memory_user'),
      action: z.enum(['add', 'replace', 'remove']),
      entry: text,
      replaced: text.optional(),
    })
    .strict(),
  /** Applying a writer sub-agent's changes to the user's tree (subagents/writer.ts). */
  z
    .object({
      id: z.literal('subagent_merge'),
      agent: text,
      files: z.array(text),
      protected: z.array(z.object({ path: text, why: text }).strict()),
      diff: text,
    })
    .strict(),
  /** A PreToolUse hook asks the user to confirm a call (hooks/toolHooks.ts). */
  z.object({ id: z.literal('hook_confirm'), tool: text, input: text }).strict(),
  /** A sandboxed command connects to a domain not allowed yet (safety/sandbox/domains.ts). */
  z
    .object({ id: z.literal('network_domain'), host: text, port: z.number().int().min(0).max(65535) })
    .strict(),
]);

export type ApprovalMessage = z.infer<typeof approvalMessageSchema>;
export type ApprovalMessageId = ApprovalMessage['id'];

import type {
  AgentMessage,
  AssistantBlock,
  ContextEditMessage,
  SummaryMessage,
  ToolResultMessage,
} from '../messages.ts';

// The model's VIEW of a transcript: summaries first (immutable, in the order they were made; a merged
// summary takes the place of the ones it replaces), then every
// message no summary replaces, with persisted context edits (pruning stages 1-2) applied by message id.
// A pure function of the transcript, so a resumed session rebuilds exactly the same bytes.

export type ToolUseBlock = Extract<AssistantBlock, { type: 'tool_use' }>;

export interface ContextView {
  readonly summaries: readonly SummaryMessage[];
  /** Model-visible messages after the summaries, edits applied. */
  readonly messages: readonly AgentMessage[];
  /** Highest stage applied so far to each edited message. */
  readonly editStage: ReadonlyMap<string, number>;
  readonly replaced: ReadonlySet<string>;
  /** Original content of every edited tool result. */
  readonly originals: ReadonlyMap<string, string>;
}

export function isModelVisible(message: AgentMessage): boolean {
  return (
    message.role === 'user' ||
    message.role === 'assistant' ||
    message.role === 'tool_result' ||
    message.role === 'reminder'
  );
}

export function buildView(transcript: readonly AgentMessage[]): ContextView {
  const summaries: SummaryMessage[] = [];
  const replaced = new Set<string>();
  const edits = new Map<string, string>();
  const editStage = new Map<string, number>();
  for (const message of transcript) {
    if (message.role === 'summary') {
      summaries.push(message);
      for (const id of message.replaces) replaced.add(id);
    } else if (message.role === 'context_edit') {
      applyEdit(message, edits, editStage);
    }
  }
  const front = summaries.filter((s) => !replaced.has(s.id));
  const messages: AgentMessage[] = [];
  const originals = new Map<string, string>();
  for (const message of transcript) {
    if (!isModelVisible(message) || replaced.has(message.id)) continue;
    const edited = message.role === 'tool_result' ? edits.get(message.id) : undefined;
    if (edited === undefined || message.role !== 'tool_result') {
      messages.push(message);
      continue;
    }
    originals.set(message.id, message.content);
    messages.push(editedMessage(message, edited));
  }
  return { summaries: front, messages, editStage, replaced, originals };
}

// One object per (result, edited content): a rebuilt view hands out the same objects, so estimates
// cached per message stay valid for edited results too.
const editedCache = new WeakMap<ToolResultMessage, ToolResultMessage>();

function editedMessage(original: ToolResultMessage, content: string): ToolResultMessage {
  const cached = editedCache.get(original);
  if (cached?.content === content) return cached;
  // An edited result (trimmed, cleared) keeps none of its images: they are what costs the most.
  const { images: _dropped, ...rest } = original;
  const edited = { ...rest, content } satisfies ToolResultMessage;
  editedCache.set(original, edited);
  return edited;
}

function applyEdit(
  message: ContextEditMessage,
  edits: Map<string, string>,
  stages: Map<string, number>,
): void {
  for (const edit of message.edits) {
    edits.set(edit.messageId, edit.content);
    stages.set(edit.messageId, Math.max(stages.get(edit.messageId) ?? 0, message.stage));
  }
}

/** The AgentMessage list handed to `toLlm`: summaries, then the rest. */
export function viewMessages(view: ContextView): AgentMessage[] {
  return [...view.summaries, ...view.messages];
}

/** tool_use id → the block that asked for it (to describe a result when it is pruned). */
export function toolUseIndex(transcript: readonly AgentMessage[]): Map<string, ToolUseBlock> {
  const index = new Map<string, ToolUseBlock>();
  for (const message of transcript) {
    if (message.role !== 'assistant') continue;
    for (const block of message.content) if (block.type === 'tool_use') index.set(block.id, block);
  }
  return index;
}

/** Skills whose full guide is in the view unpruned (a Skill result in 'full' mode, never edited). */
export function fullSkillsIn(view: ContextView): Set<string> {
  const names = new Set<string>();
  for (const message of view.messages) {
    if (message.role !== 'tool_result' || message.toolName !== 'Skill' || view.editStage.has(message.id))
      continue;
    const data = message.result?.data as { mode?: unknown; name?: unknown } | null | undefined;
    if (data?.mode === 'full' && typeof data.name === 'string') names.add(data.name);
  }
  return names;
}

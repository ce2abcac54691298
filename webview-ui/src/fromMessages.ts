import type { AgentMessage } from '../../src/agent/messages.ts';
import { addNotice, assistantBlocks, draftOf, get, put, toolFromUse, withResult } from './draft.ts';
import { imagesOf, initialState, type Item } from './model.ts';

// A transcript rebuilt from the messages alone (an old log whose events are gone): what was said,
// each tool call with its result, notices; a call that never got a result shows as cancelled.

/** Items for a transcript reopened from a log whose events are not available. */
export function itemsFromMessages(messages: readonly AgentMessage[]): Item[] {
  const draft = draftOf(initialState());
  for (const message of messages) {
    switch (message.role) {
      case 'user':
        put(draft, {
          kind: 'user',
          id: message.id,
          text: message.text,
          mentions: message.mentions ?? [],
          steering: message.steering ?? false,
          ...imagesOf(message),
        });
        break;
      case 'assistant': {
        const blocks = assistantBlocks(message);
        put(draft, { kind: 'assistant', id: message.id, model: message.model, blocks, streaming: false });
        for (const block of message.content) {
          if (block.type === 'tool_use')
            put(draft, { ...toolFromUse(block.id, block.name, block.input), status: 'cancelled' });
        }
        break;
      }
      case 'tool_result': {
        const prev =
          get(draft, message.toolUseId, 'tool') ??
          toolFromUse(message.toolUseId, message.toolName, undefined);
        put(draft, withResult(prev, message.result, message.result.stats.time_ms));
        break;
      }
      case 'notice':
        addNotice(draft, message.id, message.level, message.text);
        break;
      case 'summary':
        addNotice(draft, message.id, 'info', 'Earlier conversation was summarised to free context space.');
        break;
      case 'reminder':
      case 'context_edit':
        break;
    }
  }
  return draft.items;
}

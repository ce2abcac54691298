import { type Rng, randInt } from '../ids.ts';
import { corruptJson, type OutBlock, splitArbitrarily } from '../sse.ts';

// The streamed bodies as OpenAI writes them. Chat Completions: `data: {chunk}` lines (no event names),
// a first chunk with the role, content deltas, each tool call opened by a fragment with its index, id
// and name and continued by argument fragments, a finish chunk, the usage chunk (choices: []) when
// `stream_options.include_usage` asked for it, then `data: [DONE]`. Responses: named events
// (response.created … response.completed) with a sequence number.

export interface WireUsage {
  prompt: number;
  cached: number;
  output: number;
}

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
export function openaiId(rng: Rng, prefix: string, length = 24): string {
  let out = prefix;
  for (let i = 0; i < length; i++) out += BASE62[randInt(rng, 0, 61)];
  return out;
}

export type Visible = Extract<OutBlock, { type: 'text' } | { type: 'tool_use' }>;

export function chatUsage(u: WireUsage) {
  return {
    prompt_tokens: u.prompt,
    completion_tokens: u.output,
    total_tokens: u.prompt + u.output,
    prompt_tokens_details: { cached_tokens: u.cached, audio_tokens: 0 },
    completion_tokens_details: {
      reasoning_tokens: 0,
      audio_tokens: 0,
      accepted_prediction_tokens: 0,
      rejected_prediction_tokens: 0,
    },
  };
}

export function responsesUsage(u: WireUsage) {
  return {
    input_tokens: u.prompt,
    input_tokens_details: { cached_tokens: u.cached },
    output_tokens: u.output,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: u.prompt + u.output,
  };
}

const argsOf = (b: Extract<Visible, { type: 'tool_use' }>) => b.partialJson ?? JSON.stringify(b.input ?? {});

export function chatChunks(o: {
  id: string;
  model: string;
  created: number;
  blocks: Visible[];
  callIds: string[];
  finish: string;
  usage: WireUsage;
  includeUsage: boolean;
  corruptToolJson: boolean;
  rng: Rng;
}): string[] {
  const base = {
    id: o.id,
    object: 'chat.completion.chunk',
    created: o.created,
    model: o.model,
    service_tier: 'default',
    system_fingerprint: 'fp_keel_emu',
  };
  const usageNull = o.includeUsage ? { usage: null } : {};
  const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
    `data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }], ...usageNull })}\n\n`;
  const out: string[] = [];
  const hasText = o.blocks.some((b) => b.type === 'text');
  out.push(chunk({ role: 'assistant', content: hasText ? '' : null, refusal: null }));
  let call = 0;
  let corrupted = false;
  for (const b of o.blocks) {
    if (b.type === 'text') {
      for (const piece of splitArbitrarily(b.text, o.rng)) out.push(chunk({ content: piece }));
      continue;
    }
    const index = call;
    const id = o.callIds[call++]!;
    out.push(
      chunk({ tool_calls: [{ index, id, type: 'function', function: { name: b.name, arguments: '' } }] }),
    );
    let json = argsOf(b);
    if (o.corruptToolJson && !corrupted) {
      json = corruptJson(json);
      corrupted = true;
    }
    for (const piece of splitArbitrarily(json, o.rng))
      out.push(chunk({ tool_calls: [{ index, function: { arguments: piece } }] }));
  }
  out.push(chunk({}, o.finish));
  if (o.includeUsage)
    out.push(`data: ${JSON.stringify({ ...base, choices: [], usage: chatUsage(o.usage) })}\n\n`);
  out.push('data: [DONE]\n\n');
  return out;
}

export function responseEvents(o: {
  id: string;
  model: string;
  created: number;
  blocks: Visible[];
  callIds: string[];
  incomplete: boolean;
  usage: WireUsage;
  corruptToolJson: boolean;
  rng: Rng;
}): string[] {
  let seq = 0;
  const ev = (type: string, data: Record<string, unknown>) =>
    `event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: seq++, ...data })}\n\n`;
  const response = (status: string, output: unknown[], extra: Record<string, unknown> = {}) => ({
    id: o.id,
    object: 'response',
    created_at: o.created,
    status,
    model: o.model,
    output,
    parallel_tool_calls: true,
    store: false,
    usage: null,
    error: null,
    incomplete_details: null,
    ...extra,
  });
  const out: string[] = [ev('response.created', { response: response('in_progress', []) })];
  out.push(ev('response.in_progress', { response: response('in_progress', []) }));
  const done: unknown[] = [];
  let call = 0;
  let corrupted = false;
  for (const [output_index, b] of o.blocks.entries()) {
    if (b.type === 'text') {
      const item_id = openaiId(o.rng, 'msg_', 32);
      const item = { id: item_id, type: 'message', status: 'in_progress', role: 'assistant', content: [] };
      out.push(ev('response.output_item.added', { output_index, item }));
      out.push(
        ev('response.content_part.added', {
          item_id,
          output_index,
          content_index: 0,
          part: { type: 'output_text', text: '', annotations: [] },
        }),
      );
      for (const delta of splitArbitrarily(b.text, o.rng))
        out.push(
          ev('response.output_text.delta', { item_id, output_index, content_index: 0, delta, logprobs: [] }),
        );
      out.push(
        ev('response.output_text.done', {
          item_id,
          output_index,
          content_index: 0,
          text: b.text,
          logprobs: [],
        }),
      );
      const part = { type: 'output_text', text: b.text, annotations: [] };
      out.push(ev('response.content_part.done', { item_id, output_index, content_index: 0, part }));
      const finished = { ...item, status: 'completed', content: [part] };
      out.push(ev('response.output_item.done', { output_index, item: finished }));
      done.push(finished);
      continue;
    }
    const item_id = openaiId(o.rng, 'fc_', 32);
    const call_id = o.callIds[call++]!;
    const item = {
      id: item_id,
      type: 'function_call',
      status: 'in_progress',
      call_id,
      name: b.name,
      arguments: '',
    };
    out.push(ev('response.output_item.added', { output_index, item }));
    let json = argsOf(b);
    if (o.corruptToolJson && !corrupted) {
      json = corruptJson(json);
      corrupted = true;
    }
    for (const delta of splitArbitrarily(json, o.rng))
      out.push(ev('response.function_call_arguments.delta', { item_id, output_index, delta }));
    out.push(ev('response.function_call_arguments.done', { item_id, output_index, arguments: json }));
    const finished = { ...item, status: 'completed', arguments: json };
    out.push(ev('response.output_item.done', { output_index, item: finished }));
    done.push(finished);
  }
  const usage = responsesUsage(o.usage);
  out.push(
    o.incomplete
      ? ev('response.incomplete', {
          response: response('incomplete', done, {
            usage,
            incomplete_details: { reason: 'max_output_tokens' },
          }),
        })
      : ev('response.completed', { response: response('completed', done, { usage }) }),
  );
  return out;
}

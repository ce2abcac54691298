import type { MessagesRequest } from '../types.ts';

// OpenAI requests (Chat Completions, Responses) checked the way the API checks them, and seen as a
// Messages API request: the scenario scripting (reply cursor, threads told apart by the first user
// message, `expect` on the last user message's text and tool results) then works unchanged, so the
// sessions scripted for the Anthropic tests run here too.

export type OpenAIApi = 'chat' | 'responses';

export class OpenAIRequestError extends Error {
  constructor(
    message: string,
    readonly param: string | null = null,
    readonly code: string | null = null,
  ) {
    super(message);
  }
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => v !== null && typeof v === 'object' && !Array.isArray(v);
const NAME = /^[a-zA-Z0-9_-]{1,64}$/;

interface Turn {
  role: 'user' | 'assistant';
  content: Obj[];
}

function push(turns: Turn[], role: Turn['role'], blocks: Obj[]): void {
  if (blocks.length === 0) return;
  const last = turns.at(-1);
  // Consecutive same-role items are one turn; a user turn's tool results come first.
  if (last?.role === role) {
    if (role === 'user') {
      const results = [...last.content, ...blocks].filter((b) => b.type === 'tool_result');
      const rest = [...last.content, ...blocks].filter((b) => b.type !== 'tool_result');
      last.content = [...results, ...rest];
    } else last.content.push(...blocks);
  } else turns.push({ role, content: [...blocks] });
}

function partsText(content: unknown, param: string): Obj[] {
  if (typeof content === 'string') return content === '' ? [] : [{ type: 'text', text: content }];
  if (!Array.isArray(content))
    throw new OpenAIRequestError(
      `Invalid type for '${param}': expected a string or an array.`,
      param,
      'invalid_type',
    );
  return content.flatMap((p: unknown, i): Obj[] => {
    if (!isObj(p))
      throw new OpenAIRequestError(`Invalid '${param}[${i}]'.`, `${param}[${i}]`, 'invalid_type');
    if (
      (p.type === 'text' || p.type === 'input_text' || p.type === 'output_text') &&
      typeof p.text === 'string'
    )
      return [{ type: 'text', text: p.text }];
    if (p.type === 'image_url' || p.type === 'input_image')
      return [{ type: 'image', source: { type: 'url' } }];
    throw new OpenAIRequestError(
      `Invalid value: '${String(p.type)}'. Supported values are: 'text' and 'image_url'.`,
      `${param}[${i}].type`,
      'invalid_value',
    );
  });
}

function parseArgs(text: unknown): unknown {
  try {
    return JSON.parse(String(text));
  } catch {
    return String(text);
  }
}

function common(body: Obj): { model: string; tools: Obj[] } {
  if (typeof body.model !== 'string' || body.model === '')
    throw new OpenAIRequestError('you must provide a model parameter', null, null);
  const tools = body.tools === undefined ? [] : body.tools;
  if (!Array.isArray(tools))
    throw new OpenAIRequestError("Invalid type for 'tools'.", 'tools', 'invalid_type');
  return { model: body.model, tools: tools as Obj[] };
}

function toolName(tool: Obj, api: OpenAIApi, i: number): string {
  const fn = api === 'chat' ? (tool.function as Obj | undefined) : tool;
  const name = fn?.name;
  const param = api === 'chat' ? `tools[${i}].function.name` : `tools[${i}].name`;
  if (tool.type !== 'function')
    throw new OpenAIRequestError(
      `Invalid value: '${String(tool.type)}'. Supported values are: 'function'.`,
      `tools[${i}].type`,
      'invalid_value',
    );
  if (typeof name !== 'string' || !NAME.test(name))
    throw new OpenAIRequestError(
      `Invalid '${param}': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.`,
      param,
      'invalid_value',
    );
  return name;
}

export function chatView(body: Obj): MessagesRequest {
  const { model, tools } = common(body);
  const messages = body.messages;
  if (!Array.isArray(messages) || messages.length === 0)
    throw new OpenAIRequestError("[] is too short - 'messages'", 'messages', null);
  if (body.stream_options !== undefined && body.stream !== true)
    throw new OpenAIRequestError(
      "The 'stream_options' parameter is only allowed when 'stream' is enabled.",
      'stream_options',
      null,
    );
  const system: Obj[] = [];
  const turns: Turn[] = [];
  let open: { at: number; ids: Set<string> } | undefined;
  messages.forEach((m: unknown, i) => {
    if (!isObj(m))
      throw new OpenAIRequestError(`Invalid type for 'messages[${i}]'.`, `messages[${i}]`, 'invalid_type');
    const role = m.role;
    if (open && role !== 'tool' && open.ids.size > 0)
      throw new OpenAIRequestError(
        `An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: ${[...open.ids].join(', ')}`,
        `messages.[${open.at}].role`,
        null,
      );
    if (role === 'system' || role === 'developer')
      system.push(...partsText(m.content, `messages[${i}].content`));
    else if (role === 'user') push(turns, 'user', partsText(m.content, `messages[${i}].content`));
    else if (role === 'assistant') {
      const blocks = m.content == null ? [] : partsText(m.content, `messages[${i}].content`);
      const calls = Array.isArray(m.tool_calls) ? (m.tool_calls as Obj[]) : [];
      for (const call of calls) {
        const fn = (call.function ?? {}) as Obj;
        blocks.push({ type: 'tool_use', id: call.id, name: fn.name, input: parseArgs(fn.arguments) });
      }
      if (blocks.length === 0)
        throw new OpenAIRequestError(
          "Invalid value for 'content': expected a string, got null.",
          `messages.[${i}].content`,
          null,
        );
      push(turns, 'assistant', blocks);
      open = calls.length > 0 ? { at: i, ids: new Set(calls.map((c) => String(c.id))) } : undefined;
    } else if (role === 'tool') {
      const id = String(m.tool_call_id ?? '');
      if (!open?.ids.has(id))
        throw new OpenAIRequestError(
          "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
          `messages.[${i}].role`,
          null,
        );
      open.ids.delete(id);
      const text = partsText(m.content, `messages[${i}].content`)
        .map((b) => b.text)
        .join('');
      push(turns, 'user', [{ type: 'tool_result', tool_use_id: id, content: text }]);
    } else
      throw new OpenAIRequestError(
        `Invalid value: '${String(role)}'. Supported values are: 'system', 'assistant', 'user', 'tool', 'function', and 'developer'.`,
        `messages[${i}].role`,
        'invalid_value',
      );
  });
  if (open && open.ids.size > 0)
    throw new OpenAIRequestError(
      `An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: ${[...open.ids].join(', ')}`,
      `messages.[${open.at}].role`,
      null,
    );
  return {
    model,
    max_tokens: Number(body.max_completion_tokens ?? body.max_tokens ?? 4096),
    messages: turns,
    system,
    tools: tools.map((t, i) => ({ name: toolName(t, 'chat', i) })),
    stream: body.stream === true,
  } as MessagesRequest;
}

export function responsesView(body: Obj): MessagesRequest {
  const { model, tools } = common(body);
  const input = typeof body.input === 'string' ? [{ role: 'user', content: body.input }] : body.input;
  if (!Array.isArray(input) || input.length === 0)
    throw new OpenAIRequestError(
      "Missing required parameter: 'input'.",
      'input',
      'missing_required_parameter',
    );
  const system: Obj[] =
    typeof body.instructions === 'string' && body.instructions
      ? [{ type: 'text', text: body.instructions }]
      : [];
  const turns: Turn[] = [];
  const calls = new Set<string>();
  const answered = new Set<string>();
  input.forEach((item: unknown, i) => {
    if (!isObj(item))
      throw new OpenAIRequestError(`Invalid type for 'input[${i}]'.`, `input[${i}]`, 'invalid_type');
    if (item.type === 'function_call') {
      calls.add(String(item.call_id));
      push(turns, 'assistant', [
        { type: 'tool_use', id: item.call_id, name: item.name, input: parseArgs(item.arguments) },
      ]);
    } else if (item.type === 'function_call_output') {
      const id = String(item.call_id);
      if (!calls.has(id))
        throw new OpenAIRequestError(
          `No tool call found for function call output with call_id ${id}.`,
          'input',
          null,
        );
      answered.add(id);
      push(turns, 'user', [{ type: 'tool_result', tool_use_id: id, content: String(item.output ?? '') }]);
    } else if (item.type === undefined || item.type === 'message') {
      const role = item.role;
      const blocks = partsText(item.content, `input[${i}].content`);
      if (role === 'system' || role === 'developer') system.push(...blocks);
      else if (role === 'user' || role === 'assistant') push(turns, role, blocks);
      else
        throw new OpenAIRequestError(
          `Invalid value: '${String(role)}'.`,
          `input[${i}].role`,
          'invalid_value',
        );
    } else
      throw new OpenAIRequestError(
        `Invalid value: '${String(item.type)}'.`,
        `input[${i}].type`,
        'invalid_value',
      );
  });
  for (const id of calls)
    if (!answered.has(id))
      throw new OpenAIRequestError(`No tool output found for function call ${id}.`, 'input', null);
  return {
    model,
    max_tokens: Number(body.max_output_tokens ?? 4096),
    messages: turns,
    system,
    tools: tools.map((t, i) => ({ name: toolName(t, 'responses', i) })),
    stream: body.stream === true,
  } as MessagesRequest;
}

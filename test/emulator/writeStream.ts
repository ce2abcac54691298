import type { ServerResponse } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { bedrockChunk, bedrockException, type Platform } from './platforms.ts';
import { formatSse, type SseEvent } from './sse.ts';
import type { Fault, RecordedRequest } from './types.ts';

// Writing a streamed reply: SSE for the API and Vertex, AWS event-stream frames for Bedrock, with the
// scripted faults (an error event or a cut connection mid-stream, slow chunks).

const DEFAULT_FAULT_AFTER_EVENTS = 4;

export type ErrorType =
  | 'invalid_request_error'
  | 'authentication_error'
  | 'not_found_error'
  | 'request_too_large'
  | 'rate_limit_error'
  | 'api_error'
  | 'overloaded_error';

export function errorBody(type: ErrorType, message: string, requestId: string) {
  return { type: 'error', error: { type, message }, request_id: requestId };
}

/** Resolves false when the client went away during the pause. */
export async function pause(ms: number, signal: AbortSignal): Promise<boolean> {
  if (ms <= 0) return !signal.aborted;
  try {
    await sleep(ms, undefined, { signal });
    return true;
  } catch {
    return false;
  }
}

export async function writeStream(
  res: ServerResponse,
  record: RecordedRequest,
  events: SseEvent[],
  fault: Fault | undefined,
  signal: AbortSignal,
  requestId: string,
  cut: () => void,
  platform: Platform,
): Promise<void> {
  const bedrock = platform === 'bedrock';
  res.writeHead(200, {
    'content-type': bedrock ? 'application/vnd.amazon.eventstream' : 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
  });
  res.flushHeaders();
  record.status = 200;
  record.eventsWritten = 0;
  const breakAt =
    fault?.type === 'mid_stream_error' || fault?.type === 'cut_stream'
      ? Math.min(fault.afterEvents ?? DEFAULT_FAULT_AFTER_EVENTS, events.length - 1)
      : -1;
  const write = (chunk: string | Buffer) =>
    new Promise<void>((resolve) => {
      if (signal.aborted) return resolve();
      res.write(chunk, () => resolve());
    });

  for (const [i, event] of events.entries()) {
    if (i === breakAt) {
      if (fault?.type === 'mid_stream_error') {
        const err = errorBody('overloaded_error', 'Overloaded', requestId);
        await write(
          bedrock
            ? bedrockException('modelStreamErrorException', 'Overloaded')
            : `event: error\ndata: ${JSON.stringify(err)}\n\n`,
        );
        record.error = err.error;
        res.end();
        record.finished = true;
      } else {
        // Destroying the socket skips the terminating chunk: the client sees the connection die mid-body.
        cut();
      }
      return;
    }
    if (fault?.type === 'slow' && i > 0) {
      const ms = i === 1 ? fault.delayMs : (fault.perChunkDelayMs ?? fault.delayMs);
      if (!(await pause(ms, signal))) return;
    }
    if (signal.aborted) return;
    // Bedrock sends no pings: its event stream carries the API's events only.
    if (bedrock && event.event === 'ping') continue;
    await write(bedrock ? bedrockChunk(event.data) : formatSse(event));
    record.eventsWritten = (record.eventsWritten ?? 0) + 1;
  }
  res.end();
  record.finished = true;
}

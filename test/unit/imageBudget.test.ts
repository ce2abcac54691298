import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createImageBudget, imageRoom, imagesInView } from '../../src/agent/context/imageBudget.ts';
import type { AgentMessage } from '../../src/agent/messages.ts';
import { png } from './helpers/png.ts';

const small = { width: 800, height: 600 };
const wide = { width: 2400, height: 10 };
const many = (n: number, size = small) => Array.from({ length: n }, () => size);

test('the API rules: up to 20 images any size (to 8000 px), past 20 none over 2000 px, never over 100', () => {
  assert.equal(imageRoom(many(19, wide), [wide]), undefined, '20 wide images fit');
  assert.match(imageRoom(many(20, small), [wide]) ?? '', /^it is 2400×10 px, and with more than 20 images/);
  assert.match(
    imageRoom([wide, ...many(19)], [small]) ?? '',
    /already holds 20 images, one of them 2400×10 px; with more than 20 images the model takes images up to 2000×2000 px/,
  );
  assert.equal(imageRoom(many(99), [small]), undefined, '100 small images fit');
  assert.match(
    imageRoom(many(100), [small]) ?? '',
    /already holds 100 images and a request takes at most 100/,
  );
  assert.match(imageRoom(many(15), many(6, wide)) ?? '', /^it is 2400×10 px/, 'a batch counts as a whole');
});

test('claims of calls still running count until their result is in the transcript, then the view counts', () => {
  const transcript: AgentMessage[] = [];
  const budget = createImageBudget(() => transcript);
  for (let i = 0; i < 20; i++) assert.equal(budget.claim(`t${i}`, [wide]), undefined);
  assert.match(budget.claim('t20', [wide]) ?? '', /more than 20 images/, 'the 21st wide one is refused');
  // Results arrive: t0 with its image, t1 without it (aborted); t1's claim ends with its result.
  const image = { mediaType: 'image/png' as const, data: png(2400, 10).toString('base64') };
  const result = (id: string, images?: (typeof image)[]): AgentMessage => ({
    role: 'tool_result',
    id: `r-${id}`,
    ts: 0,
    toolUseId: id,
    toolName: 'Read',
    result: { status: 'success', data: null, text: '', stats: { time_ms: 0 } },
    content: '',
    isError: false,
    ...(images ? { images } : {}),
  });
  transcript.push(result('t0', [image]), result('t1'));
  assert.deepEqual(
    imagesInView(transcript).map((i) => [i.owner, i.width, i.height]),
    [['t0', 2400, 10]],
  );
  assert.equal(budget.check([wide]), undefined, 'room again: 19 images with this one would be 20');
});

import { z } from 'zod';
import { lazy } from '../lazy.ts';
import {
  commit,
  decodeLoaded,
  encodeOrFail,
  type Loaded,
  loadExisting,
  resolveTarget,
  runEditTool,
  statTarget,
} from './editing/apply.ts';
import { convertEol, DEFAULT_FORMAT, decodeText, type TextFormat } from './editing/codec.ts';
import { sharedWriteGate, type WriteGate } from './editing/gate.ts';
import { type EditResultData, editResult } from './editing/result.ts';
import { type ToolDefinition, ToolFailure } from './protocol.ts';

export const writeInputSchema = lazy(() =>
  z.object({
    path: z.string(),
    content: z.string(),
  }),
);
export type WriteInput = z.infer<ReturnType<typeof writeInputSchema>>;

const DESCRIPTION = `Create a file (and its folders) or rewrite a whole file; overwriting needs a Read of it this session first. Line endings, BOM and encoding are kept.
Do not use for changing part of a file (Edit/MultiEdit are cheaper and safer).
Example: {"path":"src/slug.ts","content":"export const slug = (s: string) => s.toLowerCase();\\n"}`;

export interface WriteToolOptions {
  readonly gate?: WriteGate;
}

export function createWriteTool(
  options: WriteToolOptions = {},
): ToolDefinition<WriteInput, EditResultData | null> {
  const gate = options.gate ?? sharedWriteGate();
  return {
    name: 'Write',
    description: DESCRIPTION,
    get inputSchema() {
      return writeInputSchema();
    },
    readOnly: false,
    execute: (input, ctx) =>
      runEditTool(ctx, async () => {
        const target = resolveTarget(ctx, input.path);
        const stat = await statTarget(ctx, target);
        let before: Loaded | undefined;
        let beforeText = '';
        let format: TextFormat = DEFAULT_FORMAT;
        let content = input.content;
        if (stat) {
          before = await loadExisting(ctx, target, stat.mode);
          if (decodeText(before.bytes).ok) {
            const decoded = decodeLoaded(target, before);
            beforeText = decoded.text;
            format = decoded.format;
            // A file that has line breaks keeps its style; one without adopts what the model wrote.
            content = convertEol(content, format.eol);
          }
          // A binary file being replaced by text: the old format tells us nothing; write plain UTF-8.
        }
        const bytes = encodeOrFail(target, content, format);
        if (before && Buffer.from(bytes).equals(Buffer.from(before.bytes))) {
          throw new ToolFailure(
            'INVALID_PARAM',
            `${target.display} already has exactly this content; nothing was written.`,
            'No write is needed; continue with the next step.',
          );
        }
        const finish = await commit(ctx, { tool: 'Write', target, gate, before, bytes });
        return finish(
          editResult({
            verb: before ? 'Wrote' : 'Created',
            display: target.display,
            action: before ? 'modify' : 'create',
            before: beforeText,
            after: content,
            lines: [],
            levels: [],
          }),
        );
      }),
  };
}

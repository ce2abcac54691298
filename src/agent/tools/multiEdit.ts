import { z } from 'zod';
import { lazy } from '../lazy.ts';
import { commit, encodeOrFail, loadForEdit, runEditTool } from './editing/apply.ts';
import { sharedWriteGate, type WriteGate } from './editing/gate.ts';
import type { MatchLevel } from './editing/normalize.ts';
import { applyEdit } from './editing/replace.ts';
import { type EditResultData, editResult } from './editing/result.ts';
import { type ToolDefinition, ToolFailure } from './protocol.ts';

export const multiEditInputSchema = lazy(() =>
  z.object({
    path: z.string(),
    edits: z
      .array(
        z.object({
          old_string: z.string(),
          new_string: z.string(),
          replace_all: z.boolean().optional(),
        }),
      )
      .min(1)
      .max(100),
  }),
);
export type MultiEditInput = z.infer<ReturnType<typeof multiEditInputSchema>>;

const DESCRIPTION = `Several replacements in one file you have Read this session, all or nothing.
Edits apply in order, each to the previous result; each old_string must match one place unless replace_all; one failure writes nothing.
Do not use for a single change (Edit), new files or rewrites (Write).
Example: {"path":"a.ts","edits":[{"old_string":"x()","new_string":"y()"},{"old_string":"let","new_string":"const"}]}`;

export interface MultiEditToolOptions {
  readonly gate?: WriteGate;
}

export function createMultiEditTool(
  options: MultiEditToolOptions = {},
): ToolDefinition<MultiEditInput, EditResultData | null> {
  const gate = options.gate ?? sharedWriteGate();
  return {
    name: 'MultiEdit',
    description: DESCRIPTION,
    get inputSchema() {
      return multiEditInputSchema();
    },
    readOnly: false,
    execute: (input, ctx) =>
      runEditTool(ctx, async () => {
        const { target, loaded } = await loadForEdit(ctx, input.path);
        let text = loaded.text;
        const lines: number[] = [];
        const levels: MatchLevel[] = [];
        input.edits.forEach((edit, i) => {
          const label = `${target.display} (edit ${i + 1} of ${input.edits.length}; no edit was applied)`;
          const applied = applyEdit(text, loaded.format.eol, edit, label);
          text = applied.text;
          lines.push(...applied.lines);
          levels.push(applied.level);
        });
        if (text === loaded.text) {
          throw new ToolFailure(
            'INVALID_PARAM',
            `Together the edits leave ${target.display} unchanged; nothing was written.`,
            'Check that later edits do not undo earlier ones.',
          );
        }
        const bytes = encodeOrFail(target, text, loaded.format);
        const finish = await commit(ctx, { tool: 'MultiEdit', target, gate, before: loaded, bytes });
        return finish(
          editResult({
            verb: 'Edited',
            display: target.display,
            action: 'modify',
            before: loaded.text,
            after: text,
            lines,
            levels,
            edits: input.edits.length,
          }),
        );
      }),
  };
}

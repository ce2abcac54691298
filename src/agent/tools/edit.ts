import { z } from 'zod';
import { lazy } from '../lazy.ts';
import { commit, encodeOrFail, loadForEdit, runEditTool } from './editing/apply.ts';
import { sharedWriteGate, type WriteGate } from './editing/gate.ts';
import { applyEdit } from './editing/replace.ts';
import { type EditResultData, editResult } from './editing/result.ts';
import type { ToolDefinition } from './protocol.ts';

export const editInputSchema = lazy(() =>
  z.object({
    path: z.string(),
    old_string: z.string(),
    new_string: z.string(),
    replace_all: z.boolean().optional(),
  }),
);
export type EditInput = z.infer<ReturnType<typeof editInputSchema>>;

const DESCRIPTION = `Replace one exact piece of text in a file you have Read this session.
old_string must match exactly one place (add surrounding lines to make it unique) unless replace_all; copy indentation exactly, without Read's line-number prefixes.
Do not use for new files or rewrites (Write), or several changes to one file (MultiEdit).
Example: {"path":"app.ts","old_string":"port = 3000;","new_string":"port = 8080;"}`;

export interface EditToolOptions {
  /** Shared with MultiEdit/Write so "allow for this session" covers all three. */
  readonly gate?: WriteGate;
}

export function createEditTool(
  options: EditToolOptions = {},
): ToolDefinition<EditInput, EditResultData | null> {
  const gate = options.gate ?? sharedWriteGate();
  return {
    name: 'Edit',
    description: DESCRIPTION,
    get inputSchema() {
      return editInputSchema();
    },
    readOnly: false,
    execute: (input, ctx) =>
      runEditTool(ctx, async () => {
        const { target, loaded } = await loadForEdit(ctx, input.path);
        const applied = applyEdit(loaded.text, loaded.format.eol, input, target.display);
        const bytes = encodeOrFail(target, applied.text, loaded.format);
        const finish = await commit(ctx, { tool: 'Edit', target, gate, before: loaded, bytes });
        return finish(
          editResult({
            verb: 'Edited',
            display: target.display,
            action: 'modify',
            before: loaded.text,
            after: applied.text,
            lines: applied.lines,
            levels: [applied.level],
          }),
        );
      }),
  };
}

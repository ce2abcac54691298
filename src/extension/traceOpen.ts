import { z } from 'zod';

// What the trace page (a webview showing log text) may ask of the extension: to open a file at a line.
// Checked here before anything happens; where it leads is checked again by openFile.ts (inside the
// workspace only, symlinks resolved). No vscode import: unit-tested in plain Node.

const traceOpenSchema = z
  .object({
    type: z.literal('open'),
    path: z.string().min(1).max(4096),
    line: z.number().int().min(1).max(10_000_000).optional(),
  })
  .strict();

export type TraceOpenRequest = z.infer<typeof traceOpenSchema>;

/** The request, or undefined for anything else the page (or a script in it) posts. */
export function parseTraceOpen(raw: unknown): TraceOpenRequest | undefined {
  const parsed = traceOpenSchema.safeParse(raw);
  return parsed.success ? parsed.data : undefined;
}

// Recovery guides re-injected (as a reminder at the end of the context) when the same class of error
// happens twice in a row (P6): the system prompt has one line per code; this is the fuller version,
// delivered exactly when it is relevant instead of sitting in the prefix for every call.

export const RECOVERY_GUIDES: Readonly<Record<string, string>> = {
  NOT_READ:
    'Edits need a fresh read. Read the file (the part you will change is enough), then retry the edit with text copied from that read.',
  CONFLICT:
    'The file changed after you read it (the user or a tool edited it). Read it again, check whether your change is still needed, and redo the edit against the new text. Do not re-send the old edit.',
  NO_MATCH:
    'The text you are replacing is not in the file. Do not guess variations: Read the exact lines (use offset/limit), copy them character for character including indentation, and make old text as short as still unique. If the code moved, Grep for a distinctive identifier first.',
  AMBIGUOUS_MATCH:
    'Your old text occurs several times. Add 2-3 surrounding lines (e.g. the enclosing function signature) so exactly one place matches, or change each occurrence separately.',
  NOT_FOUND:
    'The path or name does not exist. Use Glob with a pattern (e.g. "**/name*") to find the real path before retrying; never invent paths.',
  INVALID_PARAM:
    'The tool input does not match its schema. Re-read the tool description, fix the named field, and call it again with valid input.',
  TIMEOUT:
    'The command ran too long. Narrow it (one test file, one package), raise its timeout only if the work is known to be slow, or run it in the background.',
  OUTSIDE_WORKSPACE:
    'Only the workspace is accessible. Use paths relative to the workspace root; if the task needs something outside, tell the user.',
  BLOCKED_BY_POLICY:
    'The command is not allowed. Use the dedicated tool (Read/Grep/Glob/LS/Edit) instead of the shell equivalent, or ask the user.',
  DENIED_BY_USER:
    'The user said no. Do not retry the same step; explain what you wanted to do and why, and ask how to proceed.',
  TOO_LARGE:
    'The file or output is too large to handle at once. Read it in ranges (offset/limit) or Grep for the part you need.',
  BINARY_FILE: 'The file is binary. Do not read or edit it as text; find the source file that produces it.',
  LOOP_DETECTED:
    'You are repeating the same call. Stop, state what the repeated results tell you, and choose a different approach or ask the user.',
};

export function recoveryGuide(code: string): string {
  return (
    RECOVERY_GUIDES[code] ??
    `Two ${code} errors in a row: stop repeating the same step. Re-read the error text, check your assumptions with a read or search, then change approach.`
  );
}

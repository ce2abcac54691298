// The chat panel's own words, in English: the host translates each through `vscode.l10n.t` (the
// extension's l10n/bundle.l10n.<language>.json) and hands the table to the webview with its HTML, so
// the panel speaks the user's display language (webview-ui/src/l10n.ts). `{0}` marks an argument.

export const WEBVIEW_STRINGS = [
  'Message Keel',
  'Ask Keel — @ to mention a file, / for commands, Enter to send, Shift+Enter for a new line',
  'Send',
  'Stop',
  'Keel is working — your message will steer it before its next step.',
  'Chat history',
  'You',
  'Ask Keel',
  'Describe a change, ask about the code, or type @ to mention a file. Edits arrive as diffs you can accept or reject.',
  'Attached images',
  'Remove {0}',
  'Pasted image {0}',
  '{0} is {1} MB; images are limited to 5 MB. Scale it down or crop it, and paste it again.',
  '{0} is {1}; Keel can attach PNG, JPEG, GIF or WebP images.',
  'The pasted image',
] as const;

export type WebviewString = (typeof WEBVIEW_STRINGS)[number];

import { createHash } from 'node:crypto';
import { streamSessionLog } from './logStream.ts';
import { existingFiles } from './traceLinks.ts';
import { createTraceBuilder, type TraceData } from './traceModel.ts';
import { TRACE_SCRIPT, TRACE_STYLE } from './traceViewer.ts';

// `keel trace --html`: one self-contained page. The CSP allows nothing from the network and only
// the page's own script (by hash), so a trace can be opened from disk, mailed or attached to a bug.

/** JSON that is safe inside <script>: no `</script>`, no `<!--`. */
export function scriptSafeJson(value: unknown): string {
  return JSON.stringify(value)
    .replace(/</g, '\\u003c')
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029');
}

const escapeHtml = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

export function renderTraceHtml(data: TraceData): string {
  const scriptHash = createHash('sha256').update(TRACE_SCRIPT).digest('base64');
  const csp = `default-src 'none'; style-src 'unsafe-inline'; script-src 'sha256-${scriptHash}'`;
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Keel trace ${escapeHtml(data.session.id)}</title>
<style>${TRACE_STYLE}</style></head>
<body>
<header id="head"></header>
<h2>Prompt prefix (system + tools, as sent)</h2><section id="prefixes"></section>
<h2>Prefix changes</h2><nav id="jump"></nav>
<h2>Timeline</h2><main id="timeline"></main><div id="more" class="mut"></div>
<script type="application/json" id="trace-data">${scriptSafeJson(data)}</script>
<script>${TRACE_SCRIPT}</script>
</body></html>
`;
}

/** Streams the log into the trace model (a large log is never one string in memory). */
export async function buildTrace(logPath: string): Promise<TraceData> {
  const builder = createTraceBuilder();
  for await (const record of streamSessionLog(logPath)) builder.add(record);
  const data = builder.result();
  data.files = existingFiles(data);
  return data;
}

export async function traceHtml(logPath: string): Promise<string> {
  return renderTraceHtml(await buildTrace(logPath));
}

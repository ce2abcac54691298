import { TRACE_LINK_SCRIPT } from './traceLinks.ts';

// The trace page's script and style, inlined into the one HTML file (no network, no CDN). The
// script reads the embedded JSON and renders the timeline in batches as the user scrolls; the
// bodies of collapsed sections (prompt additions, tool input/output) are built on first open.
// All log text goes in through textContent: a tool output can never become markup. File paths in it
// become links (traceLinks.ts) whose text is set the same way.

export const TRACE_STYLE = `
:root{color-scheme:light dark;--fg:#1f2328;--bg:#fff;--mut:#59636e;--line:#d1d9e0;--warn:#9a6700;--err:#cf222e;--ok:#1a7f37;--mark:#fff8c5;--acc:#0969da}
@media (prefers-color-scheme:dark){:root{--fg:#e6edf3;--bg:#0d1117;--mut:#9198a1;--line:#30363d;--warn:#d29922;--err:#f85149;--ok:#3fb950;--mark:#3b2e00;--acc:#4493f8}}
body{font:13px/1.45 system-ui,sans-serif;color:var(--fg);background:var(--bg);margin:0 auto;max-width:1200px;padding:16px}
h1{font-size:18px;margin:0 0 4px}h2{font-size:15px;margin:18px 0 6px}
code,pre{font:12px/1.4 ui-monospace,monospace}pre{white-space:pre-wrap;word-break:break-word;margin:4px 0;padding:6px;border:1px solid var(--line);border-radius:4px;max-height:420px;overflow:auto}
.mut{color:var(--mut)}.kv{display:flex;flex-wrap:wrap;gap:4px 16px}.kv span b{font-weight:600}
.row{border-left:3px solid var(--line);padding:4px 8px;margin:2px 0}
.row.call{border-left-color:var(--acc)}.row.tool{margin-left:24px}.row.note.warn{border-left-color:var(--warn)}
.row.note.error,.row.tool.error{border-left-color:var(--err)}.row.run{border-left-color:var(--ok);font-weight:600}
.row.compaction{border-left-color:var(--warn);background:var(--mark)}
.row.prefix-change,.changed{background:var(--mark)}.badge{display:inline-block;padding:0 6px;border-radius:8px;font-size:11px;font-weight:700;border:1px solid var(--warn);color:var(--warn)}
.num{font-variant-numeric:tabular-nums}summary{cursor:pointer;color:var(--mut)}details{margin:2px 0 2px 8px}
#jump a{margin-right:8px;color:var(--acc)}a.file{color:var(--acc)}
`;

export const TRACE_SCRIPT = `(() => {
  const data = JSON.parse(document.getElementById('trace-data').textContent);
  const el = (tag, cls, text) => { const e = document.createElement(tag); if (cls) e.className = cls; if (text !== undefined) e.textContent = String(text); return e; };
  const fmt = (n) => Number(n).toLocaleString('en-US');
  const usd = (n) => '$' + Number(n).toFixed(4);
  const short = (h) => (h ? String(h).slice(0, 12) : '-');
  const time = (ts) => new Date(ts).toISOString().replace('T', ' ').slice(0, 23);
  const lazy = (label, build) => {
    const d = el('details'); d.append(el('summary', '', label));
    d.addEventListener('toggle', () => { if (d.open && !d.dataset.built) { d.dataset.built = '1'; d.append(build()); } });
    return d;
  };
  const pre = (text) => {
    const box = el('pre');
    for (const seg of traceSegments(String(text), files)) box.append(seg.path ? fileLink(seg) : document.createTextNode(seg.text));
    return box;
  };
  const kv = (pairs) => { const p = el('div', 'kv'); for (const [k, v, cls] of pairs) { const s = el('span', cls || ''); s.append(el('b', '', k + ' '), el('span', 'num', v)); p.append(s); } return p; };

  const s = data.session, t = data.totals;
  ${TRACE_LINK_SCRIPT}
  const files = new Set(Array.isArray(data.files) ? data.files : []);
  // In VS Code's webview the extension opens the file (inside the workspace only); on disk, a vscode:// link.
  const host = typeof acquireVsCodeApi === 'function' ? acquireVsCodeApi() : undefined;
  const root = String(s.workspace || '').replace(/\\/+$/, '');
  const fileLink = (seg) => {
    const a = el('a', 'file', seg.text);
    const target = seg.path.startsWith('/') ? seg.path : root + '/' + seg.path.replace(/^\\.\\//, '');
    a.title = 'Open ' + target + (seg.line ? ' at line ' + seg.line : '');
    if (host) {
      a.href = '#';
      a.addEventListener('click', (ev) => {
        ev.preventDefault();
        host.postMessage(seg.line ? { type: 'open', path: seg.path, line: seg.line } : { type: 'open', path: seg.path });
      });
    } else a.href = 'vscode://file' + encodeURI(target) + (seg.line ? ':' + seg.line : '');
    return a;
  };
  const head = document.getElementById('head');
  head.append(el('h1', '', 'Keel trace: ' + s.id));
  head.append(el('div', 'mut', 'model ' + s.model + ' · workspace ' + s.workspace + ' · started ' + time(s.createdAt)));
  head.append(kv([
    ['calls', fmt(t.calls)], ['tool calls', fmt(t.toolCalls)], ['input', fmt(t.input)], ['cache read', fmt(t.cacheRead)],
    ['cache write', fmt(t.cacheWrite)], ['output', fmt(t.output)], ['cost', usd(t.costUsd)], ['model time', fmt(t.latencyMs) + ' ms'],
    ['prefix changes', fmt(t.prefixChanges), t.prefixChanges ? 'changed' : ''], ['torn lines', fmt(data.tornLines)],
  ]));

  const prefixes = document.getElementById('prefixes');
  data.prefixes.forEach((p, i) => {
    prefixes.append(lazy('Prefix ' + (i + 1) + ' · hash ' + short(p.hash) + ' · system ' + fmt(p.system.length) + ' chars · ' + p.tools.length + ' tools (' + p.tools.map((x) => x.name).join(', ') + ')', () => {
      const box = el('div');
      box.append(el('div', 'mut', 'full hash ' + p.hash + ' · log seq ' + p.seq), el('b', '', 'System'), pre(p.system), el('b', '', 'Tools'));
      for (const tool of p.tools) box.append(lazy(tool.name, () => pre(tool.text)));
      return box;
    }));
  });
  if (data.prefixes.length === 0) prefixes.append(el('div', 'mut', 'This log records no prefix (written by an older Keel).'));

  const jump = document.getElementById('jump');
  const list = document.getElementById('timeline');
  const sentinel = document.getElementById('more');
  let next = 0;
  const BATCH = 200;

  const renderCall = (r) => {
    const row = el('div', 'row call' + (r.prefixChanged ? ' changed' : ''));
    const line = el('div');
    line.append(el('b', '', '#' + r.n + ' model call '), el('span', 'mut', time(r.ts) + ' · stage ' + r.stage + ' · ' + r.model + ' '));
    if (r.prefixChanged) line.append(el('span', 'badge', 'PREFIX CHANGED'));
    row.append(line);
    row.append(kv([
      ['input', fmt(r.input)], ['cache read', fmt(r.cacheRead)], ['cache write', fmt(r.cacheWrite)], ['output', fmt(r.output)],
      ['latency', fmt(r.latencyMs) + ' ms'], ['ttft', fmt(r.ttftMs) + ' ms'], ['cost', usd(r.costUsd)],
      ['prefix', short(r.prefixHash), 'prefix-hash'], ['messages', fmt(r.messageCount)], ['est. tokens', fmt(r.estTokens)],
    ]));
    const chars = r.added.reduce((a, x) => a + x.chars, 0);
    row.append(lazy('added since the previous call: ' + r.added.length + ' message(s), ' + fmt(chars) + ' chars', () => {
      const box = el('div');
      for (const a of r.added) box.append(lazy(a.label + ' · ' + fmt(a.chars) + ' chars', () => pre(a.text)));
      return box;
    }));
    if (r.reply) {
      const uses = r.reply.toolUses.length ? ' · calls ' + r.reply.toolUses.join(', ') : '';
      row.append(lazy('reply (' + (r.reply.stopReason || '-') + ')' + uses, () => pre(r.reply.text || '(no text)')));
    }
    return row;
  };
  const renderTool = (r) => {
    const row = el('div', 'row tool' + (r.status === 'error' ? ' error' : ''));
    row.append(el('b', '', r.name + ' '), el('span', 'mut', r.status + (r.code ? ' ' + r.code : '') + (r.durationMs !== undefined ? ' · ' + fmt(r.durationMs) + ' ms' : '') + ' · ' + r.id));
    if (r.childSession) row.append(el('div', 'mut', 'sub-agent ' + r.childSession + (r.childEnd ? ' · ' + r.childEnd : '') + (r.childLog ? ' · its log: ' + r.childLog + ' (keel trace ' + r.childLog + ' --html …)' : '')));
    row.append(lazy('input', () => pre(r.input)), lazy('result', () => pre(r.text || '(empty)')));
    return row;
  };
  const render = (r) => {
    let row;
    if (r.k === 'call') row = renderCall(r);
    else if (r.k === 'tool') row = renderTool(r);
    else if (r.k === 'prefix') {
      row = el('div', 'row prefix' + (r.previous ? ' prefix-change' : ''));
      if (r.previous) row.append(el('span', 'badge', 'PREFIX CHANGED'), el('span', '', ' from ' + short(r.previous) + ' to ' + short(r.hash) + ' (prefix ' + (r.index + 1) + ' above)'));
      else row.append(el('span', 'mut', 'frozen prefix logged · hash ' + short(r.hash)));
    } else if (r.k === 'run') row = el('div', 'row run', (r.phase === 'start' ? '▶ run: ' : '■ run ended: ') + r.text);
    else if (r.k === 'compaction') { row = el('div', 'row compaction'); row.append(el('b', '', r.what === 'summary' ? 'compaction' : 'pruning'), lazy('details', () => pre(r.text))); }
    else row = el('div', 'row note ' + r.level, r.level + ': ' + r.text);
    row.id = 'seq-' + r.seq;
    return row;
  };
  const more = (upTo) => {
    const end = Math.min(data.rows.length, Math.max(next + BATCH, upTo || 0));
    const frag = document.createDocumentFragment();
    for (; next < end; next++) frag.append(render(data.rows[next]));
    list.append(frag);
    sentinel.textContent = next < data.rows.length ? 'Loading more… (' + next + ' of ' + data.rows.length + ' rows)' : 'End of trace (' + data.rows.length + ' rows)';
  };
  data.rows.forEach((r, i) => {
    if ((r.k === 'call' && r.prefixChanged) || (r.k === 'prefix' && r.previous)) {
      const a = el('a', '', r.k === 'call' ? 'call #' + r.n : 'prefix ' + (r.index + 1));
      a.href = '#seq-' + r.seq;
      a.addEventListener('click', (ev) => { ev.preventDefault(); more(i + 1); document.getElementById('seq-' + r.seq).scrollIntoView(); });
      jump.append(a);
    }
  });
  if (!jump.childElementCount) jump.append(el('span', 'mut', 'The prefix never changed.'));
  new IntersectionObserver((entries) => { if (entries.some((e) => e.isIntersecting) && next < data.rows.length) more(); }).observe(sentinel);
  more();
})();`;

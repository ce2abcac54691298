// Keel chat panel (webview entry; bundled to dist/webview.js as an IIFE).
//
// The host writes the HTML; this script expects (all through `webview.asWebviewUri`, no remote URLs):
//   <meta http-equiv="Content-Security-Policy" content="default-src 'none'; font-src ${cspSource};
//         style-src ${cspSource} 'nonce-N'; script-src 'nonce-N'; img-src ${cspSource} data:">
//   <link rel="stylesheet" id="vscode-codicon-stylesheet" nonce="N"
//         href=".../node_modules/@vscode/codicons/dist/codicon.css">   (or a copy under dist/; the
//         id is required: vscode-elements' <vscode-icon> looks the stylesheet up by it; codicon.ttf
//         must sit next to the css)
//   <link rel="stylesheet" nonce="N" href=".../dist/webview-style.css">  (scripts/build.mjs output name)
//   <script nonce="N" src=".../dist/webview.js"></script>
// `localResourceRoots` must therefore include `dist/` and `node_modules/@vscode/codicons/dist/`.
// The body may be empty; the app mounts into #app (created if missing). No retainContextWhenHidden:
// the view state + last seq live in `vscode.setState` and `ready {afterSeq}` catches up.

import '@vscode-elements/elements/dist/vscode-button/index.js';
import { t } from './l10n.ts';
import '@vscode-elements/elements/dist/vscode-progress-ring/index.js';
import { type HostMessage, parseHostMessage, type WebviewMessage } from '../../src/shared/webviewProtocol.ts';
import { button, h } from './dom.ts';
import { initialState, type ViewState } from './model.ts';
import { addPending, applyHostMessage, rateAnswer } from './reducer.ts';
import { createComposer } from './render/composer.ts';
import { createTranscript } from './render/list.ts';
import {
  renderBanner,
  renderHistory,
  renderMeter,
  renderQueue,
  renderReview,
  renderJobs,
  renderTodos,
} from './render/panels.ts';
import { restoreSaved, type Saved, toSaved } from './persist.ts';
import type { ImageDraft } from './render/attachments.ts';
import { samePath } from './format.ts';

interface VsCodeApi {
  postMessage(message: unknown): void;
  getState(): unknown;
  setState(state: unknown): void;
}
declare function acquireVsCodeApi(): VsCodeApi;

const vscode = acquireVsCodeApi();
const saved = restoreSaved(vscode.getState());
// A saved view may be older than the last thing it showed (VS Code flushes webview state lazily):
// never claim the agent is working until the host's snapshot says so.
let state: ViewState = saved?.view ? { ...saved.view, running: false } : initialState();
let draft: Saved['draft'] = saved?.draft ?? { text: '', mentions: [] };
// Sent just before the previous instance of this webview went away, never acknowledged: shown as
// sending again, and resent once the host has caught this view up (see resendUnsent).
for (const u of saved?.unsent ?? [])
  state = addPending(state, u.text, u.idempotencyKey, u.mentions, u.sentAt);
let resendAfterCatchUp = (saved?.unsent?.length ?? 0) > 0;

function post(message: WebviewMessage): void {
  vscode.postMessage(message);
}

// Images of messages not yet acknowledged, for a re-post with the same key (not kept in the saved
// state: megabytes there would slow every re-show; a message resent by a reloaded panel goes without).
const pendingImages = new Map<string, ImageDraft[]>();
function withImages(idempotencyKey: string): { images?: ImageDraft[] } {
  const images = pendingImages.get(idempotencyKey);
  return images ? { images } : {};
}

// ---------- layout ----------

const app = document.getElementById('app') ?? document.body.appendChild(h('div', { id: 'app' }));
const historyPanel = h('div', {
  class: 'history',
  id: 'history-panel',
  hidden: true,
  role: 'region',
  'aria-label': t('Past chats'),
});
const historyButton = button(t('Chat history'), () => toggleHistory(), {
  icon: 'history',
  iconOnly: true,
  secondary: true,
});
historyButton.setAttribute('aria-controls', 'history-panel');
historyButton.setAttribute('aria-expanded', 'false');
// The view's own title bar already says "Keel" and has New Chat / Stop: no second header here.
// `npm start` without an API key marks the panel as a demo (answers from the bundled emulator).
const demo = app.dataset['demo'] === '1';
const toolbar = h(
  'div',
  { class: 'toolbar', role: 'toolbar', 'aria-label': t('Chat') },
  demo
    ? h(
        'span',
        {
          class: 'demo-badge',
          title: t(
            "Demo mode: the answers are scripted by Keel's bundled emulator; no model is called and nothing costs money. Set an API key for real answers.",
          ),
        },
        t('DEMO — scripted answers, no model'),
      )
    : null,
  h('span', { class: 'status', role: 'status', id: 'run-status' }),
  historyButton,
);
const transcript = createTranscript();
const todos = h('div', { class: 'todos-panel' });
const jobs = h('div', { class: 'jobs-panel', role: 'region', 'aria-label': t('Background jobs') });
const review = h('div', { class: 'review', role: 'region', 'aria-label': t('Pending changes') });
const queue = h('div', { class: 'queue', 'aria-label': t('Queued messages') });
const banner = h('div', { class: 'banner' });
const meter = h('div', { class: 'meter' });
const composer = createComposer({
  submit(text, mentions, images) {
    const idempotencyKey = crypto.randomUUID();
    state = addPending(state, text, idempotencyKey, mentions);
    // Saved before it is posted: if this webview goes away now, the next one resends it (unsent).
    persist();
    if (images.length > 0) pendingImages.set(idempotencyKey, images);
    post({ type: 'submit', text, mentions, idempotencyKey, ...withImages(idempotencyKey) });
    watchDelivery(idempotencyKey);
    // What the user just sent, and the answer to it, is what they want to see next.
    transcript.followLatest();
    schedule();
  },
  stop: () => post({ type: 'stop' }),
  error(text) {
    state = { ...state, banner: { level: 'error', text } };
    schedule();
  },
  setMode: (mode) => post({ type: 'setMode', mode }),
  setEffort: (effort) => post({ type: 'setEffort', effort }),
  requestCompletions: (query) => post({ type: 'requestFileCompletions', query }),
  changed(next) {
    draft = next;
    schedulePersist();
  },
});
app.replaceChildren(
  toolbar,
  historyPanel,
  transcript.element,
  h('div', { class: 'footer' }, todos, jobs, review, queue, banner, composer.element, meter),
);

function toggleHistory(): void {
  historyPanel.hidden = !historyPanel.hidden;
  historyButton.setAttribute('aria-expanded', String(!historyPanel.hidden));
  if (!historyPanel.hidden) {
    post({ type: 'listSessions' });
    renderHistory(historyPanel, state, post, closeHistory);
    historyPanel.querySelector<HTMLElement>('button')?.focus();
  }
}

function closeHistory(): void {
  historyPanel.hidden = true;
  historyButton.setAttribute('aria-expanded', 'false');
  composer.focus();
}

// ---------- render loop ----------

const pendingHunks = (path: string) =>
  state.review.filter((f) => samePath(f.path, path)).reduce((n, f) => n + f.hunks.length, 0);
const settled = (path: string) => state.reviewSettled?.find((f) => samePath(f.path, path));
const rating = (messageId: string) =>
  state.ratings && Object.hasOwn(state.ratings, messageId) ? state.ratings[messageId] : undefined;
const rated = (messageId: string, value: 'up' | 'down') => {
  state = rateAnswer(state, messageId, value);
  schedulePersist();
};

let frame = 0;
function schedule(): void {
  if (frame) return;
  frame = requestAnimationFrame(() => {
    frame = 0;
    render();
  });
}

function render(): void {
  transcript.render(state.items, { post, pendingHunks, settled, rating, rated });
  renderTodos(todos, state);
  renderJobs(jobs, state, post);
  renderReview(review, state, post);
  renderQueue(queue, state);
  renderBanner(banner, state);
  renderMeter(meter, state, { demo });
  if (!historyPanel.hidden) renderHistory(historyPanel, state, post, closeHistory);
  composer.setRunning(state.running);
  const status = toolbar.querySelector<HTMLElement>('#run-status')!;
  status.textContent = state.running ? t('Working…') : '';
  document.body.dataset['running'] = String(state.running);
  schedulePersist();
}

// Saving serialises the whole view (O(transcript)): debounced, so a streaming answer saves when it
// pauses, or every few seconds while it goes on, never per delta. pagehide / hidden save at once,
// and anything newer than the saved view comes back from the host (`ready {afterSeq}`).
const PERSIST_IDLE_MS = 400;
const PERSIST_MAX_WAIT_MS = 4000;
let persistTimer: ReturnType<typeof setTimeout> | undefined;
let persistPendingSince = 0;
function persist(): void {
  clearTimeout(persistTimer);
  persistTimer = undefined;
  vscode.setState(toSaved(state, draft));
}
function schedulePersist(): void {
  const now = performance.now();
  if (persistTimer === undefined) persistPendingSince = now;
  clearTimeout(persistTimer);
  const wait = Math.min(PERSIST_IDLE_MS, persistPendingSince + PERSIST_MAX_WAIT_MS - now);
  persistTimer = setTimeout(persist, Math.max(0, wait));
}
window.addEventListener('pagehide', persist);
document.addEventListener('visibilitychange', () => {
  if (document.visibilityState === 'hidden') persist();
});

// ---------- delivery ----------

// The host says `submitReceived` the moment a message arrives. Until then the message is shown as
// sending and posted again now and then (same key: the host runs it once); a host that never
// answers gets it back into the input with a notice, so typed text is never silently dropped.
const DELIVERY_RETRY_MS = 2500;
const DELIVERY_ATTEMPTS = 4;
function watchDelivery(idempotencyKey: string, attempt = 1): void {
  setTimeout(() => {
    const q = state.queue.find((x) => x.idempotencyKey === idempotencyKey);
    if (!q || q.received || q.state !== 'sending') return;
    if (attempt < DELIVERY_ATTEMPTS) {
      post({
        type: 'submit',
        text: q.text,
        mentions: [...(q.mentions ?? [])],
        idempotencyKey,
        ...withImages(idempotencyKey),
      });
      watchDelivery(idempotencyKey, attempt + 1);
      return;
    }
    state = {
      ...state,
      queue: state.queue.filter((x) => x !== q),
      banner: {
        level: 'error',
        text: t('Keel did not receive your message. It is back in the input: send it again.'),
      },
    };
    giveBack(q.text, q.mentions ?? []);
    schedule();
  }, DELIVERY_RETRY_MS);
}

/** A message that was not sent goes back into the input, unless the user is typing another one. */
function giveBack(text: string, mentions: readonly string[]): void {
  if (composer.text().trim() === '') composer.setInput(text, mentions);
}

// ---------- host messages ----------

/** Resend unacknowledged submissions (same idempotency key) unless the transcript shows them. */
function resendUnsent(): void {
  const arrived = new Set(
    state.items
      .filter((i) => i.kind === 'user')
      .slice(-10)
      .map((i) => i.text),
  );
  for (const q of state.queue) {
    if (q.state !== 'sending' || !q.idempotencyKey) continue;
    if (arrived.has(q.text)) {
      state = { ...state, queue: state.queue.filter((x) => x !== q) };
      continue;
    }
    post({
      type: 'submit',
      text: q.text,
      mentions: [...(q.mentions ?? [])],
      idempotencyKey: q.idempotencyKey,
    });
  }
}

function handle(message: HostMessage): void {
  if (message.type === 'submitResult') pendingImages.delete(message.idempotencyKey);
  if (message.type === 'fileCompletions') composer.showCompletions(message.query, message.items);
  else if (message.type === 'setInput')
    composer.setInput(message.text, message.mentions, message.append === true);
  else if (message.type === 'modes') composer.setModes(message.modes, message.current);
  else if (message.type === 'effort') composer.setEffort(message.effort);
  else if (message.type === 'submitResult' && !message.ok) {
    const refused = state.queue.find((q) => q.idempotencyKey === message.idempotencyKey);
    if (refused) giveBack(refused.text, refused.mentions ?? []);
  }
  state = applyHostMessage(state, message);
  // `sessions` is the host's last answer to `ready`: the transcript is current now.
  if (resendAfterCatchUp && message.type === 'sessions') {
    resendAfterCatchUp = false;
    resendUnsent();
  }
  if (state.needsResync) {
    // An event from a session we don't show: ask for a full snapshot of the host's current one.
    state = { ...state, needsResync: false };
    post({ type: 'ready', afterSeq: 0 });
  }
  schedule();
}

window.addEventListener('message', (event: MessageEvent) => {
  const parsed = parseHostMessage(event.data);
  if (!parsed.ok) {
    console.warn(`[keel] ignored an invalid host message: ${parsed.error}`);
    return;
  }
  handle(parsed.value);
});

if (draft.text) composer.setInput(draft.text, draft.mentions);
render();
// A view that has seen no event names no session worth resuming (e.g. an empty new chat).
post(
  state.sessionId && state.lastSeq > 0
    ? { type: 'ready', afterSeq: state.lastSeq, sessionId: state.sessionId }
    : { type: 'ready', afterSeq: 0 },
);

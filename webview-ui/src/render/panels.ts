import type { WebviewMessage } from '../../../src/shared/webviewProtocol.ts';
import type { WebviewString } from '../../../src/shared/webviewStrings.ts';
import { t } from '../l10n.ts';
import { button, h, icon } from '../dom.ts';
import { contextPercent, formatCost, formatTokens } from '../format.ts';
import type { ViewState } from '../model.ts';
import { renderError } from './items.ts';

// The panel chrome around the transcript: toolbar + history, todo list, pending review, queued
// messages, host banner, and the context meter. Each is re-rendered whole (they are small).

type Post = (message: WebviewMessage) => void;

/** "1 change" / "3 changes", in the user's language. */
export function changeCount(n: number): string {
  return n === 1 ? t('1 change') : t('{0} changes', n);
}

function fileCount(n: number): string {
  return n === 1 ? t('1 file') : t('{0} files', n);
}

export function renderHistory(target: HTMLElement, state: ViewState, post: Post, close: () => void): void {
  target.replaceChildren();
  target.append(h('div', { class: 'panel-title' }, icon('history'), t('Past chats')));
  if (state.sessions.length === 0) {
    target.append(h('p', { class: 'muted' }, t('No past chats in this workspace yet.')));
    return;
  }
  const list = h('ul', { class: 'history-list', 'aria-label': t('Past chats') });
  for (const session of state.sessions) {
    const when = new Date(session.updatedAt).toLocaleString();
    const current = session.id === state.sessionId;
    const open = h(
      'button',
      {
        class: `history-item${current ? ' current' : ''}`,
        type: 'button',
        'data-session': session.id,
        'aria-current': current ? 'true' : null,
        'aria-label': t(
          '{0}, {1} messages, {2}',
          session.title || t('Untitled chat'),
          session.messageCount,
          when,
        ),
      },
      h('span', { class: 'history-title' }, session.title || t('Untitled chat')),
      h('span', { class: 'history-meta' }, t('{0} msgs · {1}', session.messageCount, when)),
    );
    open.addEventListener('click', () => {
      post({ type: 'openSession', id: session.id });
      close();
    });
    list.append(h('li', {}, open));
  }
  target.append(list);
}

export function renderTodos(target: HTMLElement, state: ViewState): void {
  target.hidden = state.todos.length === 0;
  if (target.hidden) {
    target.replaceChildren();
    return;
  }
  const done = state.todos.filter((t) => t.status === 'completed').length;
  const details = h(
    'details',
    { class: 'todos', open: true },
    h('summary', {}, icon('checklist'), t('Plan ({0}/{1})', done, state.todos.length)),
  );
  const list = h('ul', { class: 'todo-list', 'aria-label': t('Plan') });
  for (const todo of state.todos) {
    const glyph = { pending: 'circle-large-outline', in_progress: 'sync', completed: 'pass-filled' }[
      todo.status
    ];
    list.append(
      h(
        'li',
        { class: `todo ${todo.status}`, 'data-status': todo.status },
        icon(glyph),
        h('span', {}, todo.content),
      ),
    );
  }
  details.append(list);
  target.replaceChildren(details);
}

/** Running background jobs, each with a Stop button. */
export function renderJobs(target: HTMLElement, state: ViewState, post: Post): void {
  const running = (state.jobs ?? []).filter((j) => j.status === 'running');
  target.hidden = running.length === 0;
  if (target.hidden) {
    target.replaceChildren();
    return;
  }
  const list = h('ul', { class: 'job-list', 'aria-label': t('Background jobs') });
  for (const job of running) {
    list.append(
      h(
        'li',
        { class: 'job', 'data-job': job.id },
        icon('terminal'),
        h('span', { class: 'job-command', title: job.command }, job.command),
        button(t('Stop'), () => post({ type: 'stopJob', id: job.id }), {
          icon: 'debug-stop',
          secondary: true,
        }),
      ),
    );
  }
  target.replaceChildren(
    h('div', { class: 'panel-title' }, icon('server-process'), t('Background jobs ({0})', running.length)),
    list,
  );
}

export function renderReview(target: HTMLElement, state: ViewState, post: Post): void {
  const files = state.review.filter((f) => f.hunks.length > 0);
  target.hidden = files.length === 0;
  if (target.hidden) {
    target.replaceChildren();
    return;
  }
  const hunks = files.reduce((n, f) => n + f.hunks.length, 0);
  const summary = t('{0} in {1} to review', changeCount(hunks), fileCount(files.length));
  // One line in a narrow side bar: the label shortens (full text in its tooltip), the buttons never wrap.
  const head = h(
    'div',
    { class: 'review-head' },
    h(
      'span',
      { class: 'review-summary', title: summary },
      icon('diff'),
      h(
        'span',
        { class: 'review-summary-text' },
        files.length === 1 ? t('{0} to review', changeCount(hunks)) : summary,
      ),
    ),
    button(t('Accept all'), () => post({ type: 'acceptAll' }), { icon: 'check-all' }),
    button(t('Reject all'), () => post({ type: 'rejectAll' }), { icon: 'discard', secondary: true }),
  );
  const details = h('details', { class: 'review-files' }, h('summary', {}, t('Show changes')));
  for (const file of files) {
    const open = h(
      'a',
      { href: '#', class: 'review-path', title: t('Open diff of {0}', file.path) },
      file.path,
    );
    open.addEventListener('click', (event) => {
      event.preventDefault();
      post({ type: 'openDiff', path: file.path });
    });
    const row = h('div', { class: 'review-file', 'data-path': file.path }, open);
    for (const hunk of file.hunks) {
      row.append(
        h(
          'div',
          { class: 'review-hunk', 'data-hunk': hunk.id },
          h(
            'span',
            { class: 'hunk-label' },
            t('Line {0}: +{1} −{2}', hunk.startLine, hunk.added, hunk.removed),
          ),
          button(t('Accept'), () => post({ type: 'accept', path: file.path, hunkId: hunk.id }), {
            icon: 'check',
            iconOnly: true,
            title: t('Accept change at line {0}', hunk.startLine),
          }),
          button(t('Reject'), () => post({ type: 'reject', path: file.path, hunkId: hunk.id }), {
            icon: 'discard',
            iconOnly: true,
            secondary: true,
            title: t('Reject change at line {0}', hunk.startLine),
          }),
        ),
      );
    }
    details.append(row);
  }
  target.replaceChildren(head, details);
}

export function renderQueue(target: HTMLElement, state: ViewState): void {
  target.hidden = state.queue.length === 0;
  target.replaceChildren(
    ...state.queue.map((q) =>
      h(
        'div',
        { class: 'queued-msg', 'data-state': q.state, role: 'status' },
        icon(
          q.state === 'sending' ? 'loading' : 'clock',
          q.state === 'sending' ? 'codicon-modifier-spin' : '',
        ),
        h('span', { class: 'queued-label' }, q.state === 'sending' ? t('Sending') : t('Queued')),
        h('span', { class: 'queued-text' }, q.text),
      ),
    ),
  );
}

export function renderBanner(target: HTMLElement, state: ViewState): void {
  const banner = state.banner;
  target.hidden = !banner;
  if (!banner) {
    target.replaceChildren();
    return;
  }
  if (banner.level === 'error' && banner.code) {
    target.replaceChildren(
      renderError({ code: banner.code, message: banner.text, suggestion: banner.suggestion }),
    );
    return;
  }
  target.replaceChildren(
    h(
      'div',
      { class: `notice ${banner.level}`, role: banner.level === 'info' ? 'status' : 'alert' },
      icon(banner.level === 'info' ? 'info' : banner.level === 'warn' ? 'warning' : 'error'),
      h('span', {}, banner.text),
      banner.suggestion ? h('span', { class: 'error-suggestion' }, banner.suggestion) : null,
    ),
  );
}

const STAGE_NAMES: readonly WebviewString[] = [
  'none',
  'soft trim',
  'old results cleared',
  'summarised',
  'emergency',
];

export function renderMeter(target: HTMLElement, state: ViewState, options: { demo?: boolean } = {}): void {
  const { contextTokens, contextWindow, cacheHitPct, costUsd } = state.usage;
  // Older persisted views lack these two.
  const sessionCache = state.usage.sessionCacheHitPct ?? 0;
  const stage = state.usage.stage ?? 0;
  const pct = contextPercent(contextTokens, contextWindow);
  const level = pct >= 70 ? 'high' : pct >= 50 ? 'mid' : 'low';
  const bar = h('div', {
    class: `meter-bar ${level}`,
    role: 'meter',
    'aria-label': t('Context used'),
    'aria-valuemin': 0,
    'aria-valuemax': 100,
    'aria-valuenow': pct,
  });
  const fill = h('div', { class: 'meter-fill' });
  // CSSOM, not a style attribute: the CSP forbids inline styles.
  fill.style.width = `${pct}%`;
  bar.append(fill);
  const windowText = contextWindow > 0 ? ` / ${formatTokens(contextWindow)}` : '';
  target.replaceChildren(
    bar,
    h(
      'div',
      { class: 'meter-text' },
      h(
        'span',
        { class: 'meter-context', title: t('Context tokens used / window') },
        `${formatTokens(contextTokens)}${windowText} (${pct}%)`,
      ),
      h(
        'span',
        {
          class: 'meter-cache',
          title: t(
            'Prompt cache: {0}% of the last prompt, {1}% of all prompt tokens this chat',
            Math.round(cacheHitPct),
            Math.round(sessionCache),
          ),
        },
        icon('database'),
        t('cache {0}%', Math.round(cacheHitPct)),
        h('span', { class: 'meter-session' }, t(' (this chat {0}%)', Math.round(sessionCache))),
      ),
      stage > 0
        ? h(
            'span',
            {
              class: `meter-stage stage-${Math.min(stage, 4)}`,
              title: t(
                'Context pruning stage {0} ({1}): older tool results were trimmed or summarised; the full history stays in the session log.',
                stage,
                t(STAGE_NAMES[stage] ?? 'pruned'),
              ),
            },
            icon('fold'),
            t('stage {0}', stage),
          )
        : null,
      options.demo
        ? h(
            'span',
            { class: 'meter-cost demo', title: t('Demo mode: no model is called, nothing costs money') },
            t('demo'),
          )
        : h('span', { class: 'meter-cost', title: t('Cost of this chat') }, formatCost(costUsd)),
      state.model ? h('span', { class: 'meter-model', title: t('Model') }, state.model) : null,
    ),
  );
}

import type { WebviewMessage } from '../../../src/shared/webviewProtocol.ts';
import { t } from '../l10n.ts';
import { button, h, icon } from '../dom.ts';
import type { FileRef } from '../fileLinks.ts';
import { renderMarkdown } from '../markdown.ts';
import type { AssistantItem, ErrorItem, Item, MemoryItem, NoticeItem, PlanItem, UserItem } from '../model.ts';
import { imageUrl } from './attachments.ts';
import { renderToolCard } from './toolCard.ts';

export interface RenderContext {
  post(message: WebviewMessage): void;
  /** Pending review hunks for a path (0 = nothing to accept or reject). */
  pendingHunks(path: string): number;
  /** What the user decided about a path's earlier hunks (accepted / rejected counts), if anything. */
  settled?(path: string): { readonly accepted: number; readonly rejected: number } | undefined;
  /** How the user rated an answer, if they did (shown pressed after a reload too). */
  rating?(messageId: string): 'up' | 'down' | undefined;
  /** The user rated an answer (the view keeps it; `post` tells the host). */
  rated?(messageId: string, rating: 'up' | 'down'): void;
}

/**
 * The user's text as typed, except fenced code blocks (what "Ask About Selection" sends), which
 * show as code blocks rather than raw ``` fences. Plain DOM text: no Markdown, no HTML.
 */
export function userTextParts(text: string): (string | HTMLElement)[] {
  const parts: (string | HTMLElement)[] = [];
  let at = 0;
  for (const m of text.matchAll(/^```([\w+#.-]*)[^\n]*\n([\s\S]*?)^```[ \t]*$/gm)) {
    if (m.index > at) parts.push(text.slice(at, m.index));
    const code = h('code', {}, m[2]!.replace(/\n$/, ''));
    parts.push(
      h('div', { class: 'code-block user-code', ...(m[1] ? { 'data-lang': m[1] } : {}) }, h('pre', {}, code)),
    );
    at = m.index + m[0].length;
  }
  if (at < text.length) parts.push(text.slice(at));
  return parts;
}

function restoreButton(promptNumber: number, ctx: RenderContext): HTMLElement {
  const button = h(
    'button',
    {
      type: 'button',
      class: 'msg-action restore-before',
      title: t('Restore the files Keel changed from this message on (asks first, lists conflicts)'),
      'aria-label': t('Restore to before this'),
    },
    icon('discard'),
    t('Restore to before this'),
  );
  button.addEventListener('click', () => ctx.post({ type: 'restoreBefore', promptNumber }));
  return button;
}

function editButton(promptNumber: number, ctx: RenderContext): HTMLElement {
  const button = h(
    'button',
    {
      type: 'button',
      class: 'msg-action fork-before',
      title: t(
        'Restore and edit this message: files back to before it, the chat goes on in a new branch with this text in the input (asks first)',
      ),
      'aria-label': t('Restore and edit this message'),
    },
    icon('edit'),
  );
  button.addEventListener('click', () => ctx.post({ type: 'forkBefore', promptNumber }));
  return button;
}

function renderUser(item: UserItem, ctx: RenderContext): HTMLElement {
  return h(
    'div',
    {
      class: `msg user${item.steering ? ' steering' : ''}`,
      'data-id': item.id,
      role: 'article',
      'aria-label': t('You'),
    },
    h(
      'div',
      { class: 'msg-author' },
      icon('account'),
      t('You'),
      item.steering ? h('span', { class: 'tag' }, t('steering')) : null,
      item.promptNumber !== undefined ? restoreButton(item.promptNumber, ctx) : null,
      item.promptNumber !== undefined ? editButton(item.promptNumber, ctx) : null,
    ),
    h('div', { class: 'msg-text' }, ...userTextParts(item.text)),
    item.images?.length
      ? h(
          'div',
          { class: 'msg-images' },
          ...item.images.map((image, i) =>
            h('img', { class: 'msg-image', src: imageUrl(image), alt: t('Attached image {0}', i + 1) }),
          ),
        )
      : null,
    item.mentions.length > 0
      ? h(
          'div',
          { class: 'mentions' },
          ...item.mentions.map((path) => {
            const chip = h(
              'button',
              { type: 'button', class: 'mention-chip', title: t('Open {0}', path) },
              icon('file'),
              path,
            );
            chip.addEventListener('click', () => ctx.post({ type: 'openFile', path }));
            return chip;
          }),
        )
      : null,
  );
}

/**
 * 👍/👎 under a finished answer. 👎 records at once, then offers an optional note (sent as a newer
 * rating of the same answer); the host keeps ratings for `keel eval --from-feedback`.
 */
function feedbackRow(messageId: string, ctx: RenderContext): HTMLElement {
  const row = h('div', { class: 'msg-feedback', role: 'group', 'aria-label': t('Rate this answer') });
  const status = h('span', { class: 'feedback-status', role: 'status' });
  const rate = (rating: 'up' | 'down', label: string, glyph: string) => {
    const b = h(
      'button',
      {
        type: 'button',
        class: `msg-action feedback-${rating}`,
        title: label,
        'aria-label': label,
        'aria-pressed': 'false',
      },
      glyph,
    );
    b.addEventListener('click', () => {
      ctx.post({ type: 'feedback', messageId, rating });
      ctx.rated?.(messageId, rating);
      show(rating);
      row.querySelector('.feedback-note')?.remove();
      if (rating === 'down') row.append(noteForm());
    });
    return b;
  };
  const show = (rating: 'up' | 'down') => {
    row.dataset.rating = rating;
    for (const button of Array.from(row.querySelectorAll('button[aria-pressed]')))
      button.setAttribute('aria-pressed', String(button.classList.contains(`feedback-${rating}`)));
    status.textContent = rating === 'up' ? t('Thanks for the feedback.') : t('Noted.');
  };
  const noteForm = () => {
    const input = h('input', {
      type: 'text',
      class: 'feedback-note-input',
      maxlength: 4000,
      placeholder: t('What went wrong? (optional)'),
      'aria-label': t('What went wrong (optional)'),
    });
    const form = h(
      'form',
      { class: 'feedback-note' },
      input,
      h('button', { type: 'submit', class: 'msg-action feedback-send' }, t('Send')),
    );
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      const note = input.value.trim();
      if (note) ctx.post({ type: 'feedback', messageId, rating: 'down', note });
      form.remove();
      status.textContent = note ? t('Noted, with your note.') : t('Noted.');
    });
    return form;
  };
  row.append(rate('up', t('Good answer'), '👍'), rate('down', t('Bad answer'), '👎'), status);
  const earlier = ctx.rating?.(messageId);
  if (earlier) show(earlier);
  return row;
}

function renderAssistant(item: AssistantItem, ctx: RenderContext): HTMLElement {
  const el = h('div', {
    // A finished reply with nothing to read (only tool calls) would be an empty bubble: hide it.
    class: `msg assistant${item.streaming ? ' streaming' : ''}${!item.streaming && item.blocks.every((b) => b.text.trim().length === 0) ? ' empty' : ''}`,
    'data-id': item.id,
    role: 'article',
    'aria-label': 'Keel',
    'aria-busy': item.streaming ? 'true' : null,
  });
  el.append(h('div', { class: 'msg-author' }, icon('hubot'), 'Keel'));
  const actions = {
    copy: (code: string) => ctx.post({ type: 'copyCode', code }),
    insert: (code: string) => ctx.post({ type: 'insertCode', code }),
    openFile: (target: FileRef) => ctx.post({ type: 'openFile', ...target }),
  };
  for (const block of item.blocks) {
    if (block.text.length === 0) continue;
    if (block.kind === 'thinking') {
      const details = h('details', { class: 'thinking' }, h('summary', {}, icon('lightbulb'), t('Thinking')));
      const body = h('div', { class: 'thinking-text' });
      // Rendered on first open: thinking can be long and is rarely read.
      details.addEventListener('toggle', () => {
        if (details.open && body.childElementCount === 0 && body.textContent === '')
          body.textContent = block.text;
      });
      details.append(body);
      el.append(details);
    } else {
      const body = h('div', { class: 'markdown' });
      renderMarkdown(body, block.text, actions);
      el.append(body);
    }
  }
  if (!item.streaming && item.blocks.some((b) => b.kind !== 'thinking' && b.text.trim().length > 0))
    el.append(feedbackRow(item.id, ctx));
  if (item.streaming && item.blocks.every((b) => b.text.length === 0)) {
    el.append(
      h('div', { class: 'typing' }, h('vscode-progress-ring', { 'aria-label': t('Keel is responding') })),
    );
  }
  return el;
}

function renderNotice(item: NoticeItem): HTMLElement {
  const glyph = { info: 'info', warn: 'warning', error: 'error' }[item.level];
  return h(
    'div',
    { class: `notice ${item.level}`, 'data-id': item.id, role: item.level === 'info' ? 'status' : 'alert' },
    icon(glyph),
    h('span', {}, item.text),
  );
}

export function renderError(
  item: Pick<ErrorItem, 'code' | 'message' | 'suggestion'>,
  id?: string,
): HTMLElement {
  return h(
    'div',
    { class: 'error-card', 'data-id': id, 'data-code': item.code, role: 'alert' },
    icon('error'),
    h(
      'div',
      {},
      h('span', { class: 'error-code' }, item.code),
      h('span', { class: 'error-message' }, item.message),
      item.suggestion ? h('div', { class: 'error-suggestion' }, icon('lightbulb'), item.suggestion) : null,
    ),
  );
}

function renderMemory(item: MemoryItem, ctx: RenderContext): HTMLElement {
  const where = item.scope === 'user' ? '~/.keel/MEMORY.md' : '.keel/memory/MEMORY.md';
  const title = item.origin === 'consolidation' ? t('Keel saved facts to memory') : t('Keel updated memory');
  const actions = h('div', { class: 'memory-actions' });
  if (item.undone) actions.append(h('span', { class: 'tag' }, t('Undone')));
  else {
    const keep = button(
      t('Keep'),
      () => {
        ctx.post({ type: 'memoryDecision', changeId: item.id, keep: true });
        actions.replaceChildren(h('span', { class: 'tag' }, t('Kept')));
      },
      { icon: 'check', secondary: true, className: 'memory-keep' },
    );
    const undo = button(
      t('Undo'),
      () => ctx.post({ type: 'memoryDecision', changeId: item.id, keep: false }),
      {
        icon: 'discard',
        secondary: true,
        className: 'memory-undo',
      },
    );
    actions.append(keep, undo);
  }
  return h(
    'div',
    { class: `memory-card${item.undone ? ' undone' : ''}`, 'data-id': item.id, role: 'status' },
    h('div', { class: 'memory-title' }, icon('bookmark'), title, h('span', { class: 'memory-file' }, where)),
    h(
      'pre',
      { class: 'memory-diff' },
      ...item.lines.map((l) => h('div', { class: l.sign === '+' ? 'add' : 'del' }, `${l.sign} ${l.text}`)),
    ),
    actions,
  );
}

/** Plan mode's plan, editable; Start hands the edited text to the default agent (its steps become the todos). */
function renderPlan(item: PlanItem, ctx: RenderContext): HTMLElement {
  const text = h('textarea', {
    class: 'plan-text',
    rows: Math.min(16, item.text.split('\n').length + 1),
    'aria-label': t('Plan'),
  });
  text.value = item.text;
  const start = button(t('Start'), () => ctx.post({ type: 'startPlan', text: text.value }), {
    icon: 'play',
    className: 'plan-start',
  });
  return h(
    'div',
    { class: 'plan-card', 'data-id': item.id, role: 'group', 'aria-label': t('Plan') },
    h(
      'div',
      { class: 'plan-title' },
      icon('checklist'),
      t('Plan ({0} steps)', item.steps.length),
      item.file ? h('span', { class: 'plan-file' }, item.file) : '',
    ),
    text,
    h(
      'div',
      { class: 'plan-actions' },
      h(
        'span',
        { class: 'hint' },
        t('Edit the plan if you like; Start carries it out with the steps as the todo list.'),
      ),
      start,
    ),
  );
}

export function renderItem(item: Item, ctx: RenderContext): HTMLElement {
  switch (item.kind) {
    case 'user':
      return renderUser(item, ctx);
    case 'assistant':
      return renderAssistant(item, ctx);
    case 'tool':
      return renderToolCard(item, ctx);
    case 'notice':
      return renderNotice(item);
    case 'error':
      return renderError(item, item.id);
    case 'memory':
      return renderMemory(item, ctx);
    case 'plan':
      return renderPlan(item, ctx);
    case 'divider':
      return h(
        'div',
        { class: 'divider', 'data-id': item.id, role: 'separator', 'aria-label': item.text },
        h('span', {}, item.text),
      );
  }
}

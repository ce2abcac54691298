import type { WebviewString } from '../../../src/shared/webviewStrings.ts';
import { button, h, setDisabled } from '../dom.ts';
import { t } from '../l10n.ts';
import {
  insertMention,
  insertSlash,
  type MentionQuery,
  mentionAt,
  mentionsInText,
  slashAt,
} from '../mentions.ts';
import { createAttachments, type ImageDraft } from './attachments.ts';

// The message input: Enter sends, Shift+Enter is a newline, '@' opens a keyboard-navigable file
// list and '/' as the first word a list of slash commands (the host answers `requestFileCompletions`). While the agent runs, a sent message steers it.

export interface ComposerOptions {
  submit(text: string, mentions: string[], images: ImageDraft[]): void;
  /** Something the user did could not be done (an image refused): shown in the panel's banner. */
  error(text: string): void;
  stop(): void;
  requestCompletions(query: string): void;
  /** Draft changed (persisted so a re-shown panel keeps it). */
  changed(draft: { text: string; mentions: string[] }): void;
  /** The mode picker changed: the main agent of the next chat (null = Keel's own). */
  setMode(mode: string | null): void;
  /** The effort picker changed: the chat's thinking level from its next turn on. */
  setEffort(effort: EffortLevel): void;
}

export type EffortLevel = 'low' | 'medium' | 'high' | 'max' | 'off';

/** English: translated where the picker is built (not at import, before the table is read). */
const EFFORT_CHOICES: readonly [EffortLevel, WebviewString, WebviewString][] = [
  ['low', 'Low', 'Thinking: low effort (fastest)'],
  ['medium', 'Medium', 'Thinking: medium effort'],
  ['high', 'High', 'Thinking: high effort'],
  ['max', 'Max', 'Thinking: the most effort the model allows'],
  ['off', 'No thinking', 'No thinking: the model answers at once'],
];

export interface Composer {
  readonly element: HTMLElement;
  setRunning(running: boolean): void;
  showCompletions(query: string, items: readonly string[]): void;
  /** Replace the input (or add to its end: `append`). */
  setInput(text: string, mentions: readonly string[], append?: boolean): void;
  /** The mode picker's choices (plan, custom agents) and the current one. */
  setModes(modes: readonly { name: string; description: string }[], current: string | null): void;
  /** The effort picker's current choice (the host's: the chat's, or the setting's). */
  setEffort(effort: EffortLevel): void;
  /** What is typed in the input now. */
  text(): string;
  focus(): void;
}

const MAX_OPTIONS = 50;

export function createComposer(options: ComposerOptions): Composer {
  const listId = 'mention-list';
  const textarea = h('textarea', {
    id: 'message-input',
    class: 'input',
    rows: 3,
    'aria-label': t('Message Keel'),
    'aria-autocomplete': 'list',
    'aria-controls': listId,
    placeholder: t(
      'Ask Keel — @ to mention a file, / for commands, Enter to send, Shift+Enter for a new line',
    ),
  });
  const listbox = h('ul', {
    id: listId,
    class: 'mention-list',
    role: 'listbox',
    'aria-label': t('Files'),
    hidden: true,
  });
  const send = button(t('Send'), () => doSubmit(), { icon: 'send', className: 'send' });
  const stop = button(t('Stop'), () => options.stop(), {
    icon: 'debug-stop',
    secondary: true,
    className: 'stop',
  });
  // Which agent the next chat runs as: Keel's own, plan mode (read-only, ends with a plan), or an agent file.
  const modePicker = h('select', {
    class: 'mode-picker',
    'aria-label': t('Mode'),
    title: t('Mode (starts a new chat)'),
  });
  modePicker.addEventListener('change', () => options.setMode(modePicker.value || null));
  // How hard the model thinks in this chat, from its next turn on (stored with the session).
  const effortPicker = h(
    'select',
    {
      class: 'effort-picker',
      'aria-label': t('Thinking effort'),
      title: t('Thinking effort (this chat, next turns)'),
    },
    ...EFFORT_CHOICES.map(([value, label, title]) => h('option', { value, title: t(title) }, t(label))),
  );
  effortPicker.value = 'medium';
  effortPicker.addEventListener('change', () => {
    const chosen = EFFORT_CHOICES.find(([value]) => value === effortPicker.value);
    if (chosen) options.setEffort(chosen[0]);
  });
  // Pasted or dropped images, shown above the input until sent.
  const attachments = createAttachments({ onError: (text) => options.error(text), changed: () => refresh() });
  const imageFiles = (data: DataTransfer | null) =>
    Array.from(data?.files ?? []).filter((f) => f.type.startsWith('image/'));
  textarea.addEventListener('paste', (event) => {
    const files = imageFiles(event.clipboardData);
    if (files.length === 0) return;
    event.preventDefault();
    void attachments.add(files);
  });
  textarea.addEventListener('dragover', (event) => {
    if (event.dataTransfer?.types.includes('Files')) event.preventDefault();
  });
  textarea.addEventListener('drop', (event) => {
    const files = imageFiles(event.dataTransfer);
    if (files.length === 0) return;
    event.preventDefault();
    void attachments.add(files);
  });
  const element = h(
    'div',
    { class: 'composer' },
    listbox,
    attachments.element,
    textarea,
    // Its own line: beside the pickers and buttons of a narrow side bar it became a column of
    // single characters (Chinese breaks between any two).
    h('div', { class: 'hint', id: 'composer-hint' }),
    h(
      'div',
      { class: 'composer-actions' },
      stop,
      send,
      // Last in the tab order (Tab from the input reaches Stop, then Send); shown first (CSS order).
      modePicker,
      effortPicker,
    ),
  );
  textarea.setAttribute('aria-describedby', 'composer-hint');

  let chosen: string[] = [];
  let running = false;
  let mention: MentionQuery | undefined;
  let items: readonly string[] = [];
  let active = -1;
  let timer: ReturnType<typeof setTimeout> | undefined;

  const hint = element.querySelector<HTMLElement>('#composer-hint')!;

  function refresh(): void {
    setDisabled(send, textarea.value.trim().length === 0 && attachments.count === 0);
    setDisabled(stop, !running);
    hint.textContent = running ? t('Keel is working — your message will steer it before its next step.') : '';
  }

  function closeList(): void {
    mention = undefined;
    items = [];
    active = -1;
    listbox.hidden = true;
    listbox.replaceChildren();
    textarea.removeAttribute('aria-activedescendant');
  }

  function renderList(): void {
    listbox.replaceChildren(
      ...items.map((path, i) => {
        const option = h(
          'li',
          {
            id: `mention-${i}`,
            role: 'option',
            class: 'mention-option',
            'aria-selected': i === active ? 'true' : 'false',
            'data-path': path,
          },
          path,
        );
        // mousedown, not click: keep focus in the textarea.
        option.addEventListener('mousedown', (event) => {
          event.preventDefault();
          choose(i);
        });
        return option;
      }),
    );
    listbox.hidden = items.length === 0;
    if (active >= 0) {
      textarea.setAttribute('aria-activedescendant', `mention-${active}`);
      listbox.children[active]?.scrollIntoView({ block: 'nearest' });
    } else textarea.removeAttribute('aria-activedescendant');
  }

  function choose(i: number): void {
    const path = items[i];
    if (!mention || path === undefined) return;
    const slash = mention.query.startsWith('/');
    const next = slash
      ? insertSlash(textarea.value, textarea.selectionStart, path)
      : insertMention(textarea.value, mention, textarea.selectionStart, path);
    textarea.value = next.text;
    textarea.setSelectionRange(next.caret, next.caret);
    if (!slash && !chosen.includes(path)) chosen.push(path);
    closeList();
    changed();
  }

  function changed(): void {
    refresh();
    options.changed({ text: textarea.value, mentions: mentionsInText(textarea.value, chosen) });
  }

  function doSubmit(): void {
    const typed = textarea.value.trim();
    if (!typed && attachments.count === 0) return;
    // An image sent on its own still needs words for the model (and the transcript).
    const text = typed || 'See the attached image.';
    const mentions = mentionsInText(text, chosen);
    // Clear first: a second Enter/click in the same tick finds nothing to send (no double-submit).
    textarea.value = '';
    chosen = [];
    const images = attachments.take();
    closeList();
    changed();
    options.submit(text, mentions, images);
  }

  textarea.addEventListener('input', () => {
    mention =
      slashAt(textarea.value, textarea.selectionStart) ?? mentionAt(textarea.value, textarea.selectionStart);
    if (mention) {
      const query = mention.query;
      clearTimeout(timer);
      timer = setTimeout(() => options.requestCompletions(query), 80);
    } else closeList();
    changed();
  });

  textarea.addEventListener('keydown', (event) => {
    const listOpen = !listbox.hidden && items.length > 0;
    if (listOpen && (event.key === 'ArrowDown' || event.key === 'ArrowUp')) {
      event.preventDefault();
      const delta = event.key === 'ArrowDown' ? 1 : -1;
      active = (active + delta + items.length) % items.length;
      renderList();
      return;
    }
    if (listOpen && (event.key === 'Enter' || event.key === 'Tab') && !event.shiftKey) {
      event.preventDefault();
      choose(Math.max(0, active));
      return;
    }
    if (listOpen && event.key === 'Escape') {
      event.preventDefault();
      closeList();
      return;
    }
    if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      doSubmit();
    }
  });
  textarea.addEventListener('blur', () => setTimeout(closeList, 150));

  refresh();
  return {
    element,
    setRunning(value) {
      running = value;
      refresh();
    },
    showCompletions(query, paths) {
      // Ignore stale answers: only the query still being typed counts.
      const current =
        slashAt(textarea.value, textarea.selectionStart) ??
        mentionAt(textarea.value, textarea.selectionStart);
      if (!current || current.query !== query) return;
      mention = current;
      items = paths.slice(0, MAX_OPTIONS);
      active = items.length > 0 ? 0 : -1;
      renderList();
    },
    setInput(text, mentions, append = false) {
      const before = append ? textarea.value.replace(/\s+$/, '') : '';
      textarea.value = before ? `${before} ${text}` : text;
      chosen = append ? [...chosen, ...mentions.filter((m) => !chosen.includes(m))] : [...mentions];
      textarea.setSelectionRange(textarea.value.length, textarea.value.length);
      changed();
      textarea.focus();
    },
    setModes(modes, current) {
      const option = (value: string, label: string, title: string) => {
        const o = h('option', { value, title }, label);
        o.selected = value === (current ?? '');
        return o;
      };
      modePicker.replaceChildren(
        option('', t('Agent'), t("Keel's own agent")),
        ...modes.map((m) => option(m.name, m.name === 'plan' ? t('Plan') : m.name, m.description)),
      );
    },
    setEffort(effort) {
      effortPicker.value = effort;
    },
    text: () => textarea.value,
    focus() {
      textarea.focus();
    },
  };
}

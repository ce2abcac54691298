import type { WebviewString } from '../../../src/shared/webviewStrings.ts';
import { button, h, icon } from '../dom.ts';
import {
  formatCost,
  formatDuration,
  keyArgument,
  parseUnifiedDiff,
  toolDisplayName,
  toolIcon,
  userFacingError,
} from '../format.ts';
import { t } from '../l10n.ts';
import type { SubagentView, ToolItem, ToolStatus } from '../model.ts';
import type { RenderContext } from './items.ts';
import { changeCount } from './panels.ts';

// A tool call as a compact card: icon, tool, key argument, status, duration. The result is rendered
// only when the card is expanded (tool output can be large); edit cards show their diff with
// Accept / Reject while the edit is pending review.

/** Diff lines shown before a "Show all" control. */
export const DIFF_PREVIEW_LINES = 200;
/** Live output lines shown on a running card. */
const STREAM_PREVIEW_LINES = 12;

/** English: translated where shown (the table is read when the panel renders, not at import). */
const STATUS_LABEL: Record<ToolStatus, WebviewString> = {
  pending: 'Pending',
  running: 'Running',
  success: 'Done',
  partial: 'Partial',
  error: 'Failed',
  cancelled: 'Cancelled',
};

function statusGlyph(status: ToolStatus): HTMLElement {
  if (status === 'running')
    return h('vscode-progress-ring', { class: 'tool-spinner', 'aria-label': t('Running') });
  const glyph = {
    pending: 'circle-outline',
    success: 'check',
    partial: 'warning',
    error: 'error',
    cancelled: 'circle-slash',
  }[status];
  return icon(glyph, `status-${status}`);
}

function renderDiff(diff: string): HTMLElement {
  const lines = parseUnifiedDiff(diff);
  const pre = h('pre', { class: 'diff', 'aria-label': t('Diff') });
  const show = (count: number) => {
    pre.replaceChildren(
      ...lines.slice(0, count).map((line) => h('span', { class: `diff-line diff-${line.kind}` }, line.text)),
    );
  };
  show(DIFF_PREVIEW_LINES);
  if (lines.length <= DIFF_PREVIEW_LINES) return pre;
  const more = button(
    t('Show all {0} lines', lines.length),
    () => {
      show(lines.length);
      more.remove();
    },
    { secondary: true },
  );
  return h('div', {}, pre, more);
}

function renderBody(item: ToolItem, body: HTMLElement): void {
  if (item.input !== undefined) {
    body.append(
      h('div', { class: 'tool-section' }, t('Input')),
      h('pre', { class: 'tool-input' }, JSON.stringify(item.input, null, 2)),
    );
  }
  if (item.resultText !== undefined) {
    body.append(
      h('div', { class: 'tool-section' }, t('Result')),
      h('pre', { class: 'tool-result' }, item.resultText || t('(empty)')),
    );
  } else if (item.stream) {
    body.append(
      h('div', { class: 'tool-section' }, t('Output so far')),
      h('pre', { class: 'tool-result' }, item.stream),
    );
  }
}

/** Sub-agent cards the user opened or closed: a re-render keeps their choice. */
const subagentOpen = new Map<string, boolean>();

/** A Task call's sub-agent: a collapsible card of its own tool calls, open while it works. */
function renderSubagent(sub: SubagentView): HTMLElement {
  const running = sub.status === 'running';
  const open = subagentOpen.get(sub.agentId) ?? running;
  const calls = sub.calls.length === 1 ? t('1 call') : t('{0} calls', sub.calls.length);
  const meta = `${sub.mode} · ${calls} · ${formatCost(sub.costUsd)}`;
  const details = h(
    'details',
    {
      class: 'subagent',
      'data-agent': sub.agentId,
      'data-status': sub.status,
      'aria-label': t('Sub-agent {0} ({1})', sub.description, sub.status),
      ...(open ? { open: true } : {}),
    },
    h(
      'summary',
      { class: 'subagent-header' },
      icon('hubot', 'tool-icon'),
      h('span', { class: 'subagent-title' }, t('Sub-agent: {0}', sub.description)),
      h('span', { class: 'subagent-meta' }, running ? meta : `${meta} · ${sub.status}`),
    ),
  );
  const list = h('ul', { class: 'subagent-calls', 'aria-label': t('Sub-agent tool calls') });
  for (const call of sub.calls) {
    const arg = keyArgument(call.name, call.input);
    list.append(
      h(
        'li',
        { class: 'subagent-call', 'data-status': call.status, 'data-tool': call.name },
        statusGlyph(call.status),
        h('span', { class: 'tool-name' }, call.name),
        h('span', { class: 'tool-arg', title: arg }, arg),
        call.errorCode ? h('span', { class: 'error-code' }, call.errorCode) : null,
      ),
    );
  }
  details.append(list);
  details.addEventListener('toggle', () => subagentOpen.set(sub.agentId, details.open));
  return details;
}

export function renderToolCard(item: ToolItem, ctx: RenderContext): HTMLElement {
  const arg = keyArgument(item.name, item.input);
  const title = toolDisplayName(item.name, item.input);
  const card = h('div', {
    class: 'tool-card',
    'data-id': item.id,
    'data-tool': item.name,
    'data-status': item.status,
    role: 'group',
    'aria-label': `${title}${arg ? `: ${arg}` : ''} (${t(STATUS_LABEL[item.status])})`,
  });
  const summary = h(
    'summary',
    { class: 'tool-header' },
    icon(toolIcon(item.name), 'tool-icon'),
    h('span', { class: 'tool-name' }, title),
    h('span', { class: 'tool-arg', title: arg }, arg),
    h('span', { class: 'tool-status', title: t(STATUS_LABEL[item.status]) }, statusGlyph(item.status)),
    h('span', { class: 'tool-duration' }, formatDuration(item.durationMs)),
  );
  const details = h('details', { class: 'tool-details' }, summary);
  const body = h('div', { class: 'tool-body' });
  details.append(body);
  details.addEventListener('toggle', () => {
    if (details.open && body.childElementCount === 0) renderBody(item, body);
  });
  card.append(details);
  if (item.subagent) card.append(renderSubagent(item.subagent));

  if (item.status === 'running' && item.stream) {
    const lines = item.stream.split('\n');
    if (lines[lines.length - 1] === '') lines.pop();
    card.append(
      h('pre', { class: 'tool-stream', 'aria-live': 'off' }, lines.slice(-STREAM_PREVIEW_LINES).join('\n')),
    );
  }
  if (item.error) {
    const shown = userFacingError(item.error);
    card.append(
      h(
        'div',
        { class: 'tool-error', 'data-code': item.error.code },
        h('span', { class: 'error-code', title: item.error.code }, shown.label),
        h('span', { class: 'error-message' }, shown.message),
        shown.suggestion
          ? h('div', { class: 'error-suggestion' }, icon('lightbulb'), shown.suggestion)
          : null,
      ),
    );
    // The sandbox refused part of a command: the user (never the model alone) may re-run it outside.
    if (item.error.code === 'SANDBOX_DENIED' && item.name === 'Bash') {
      card.append(
        h(
          'div',
          { class: 'edit-actions sandbox-actions' },
          button(
            t('Run outside the sandbox…'),
            () => ctx.post({ type: 'runOutsideSandbox', toolUseId: item.id }),
            {
              icon: 'shield',
              secondary: true,
            },
          ),
        ),
      );
    }
  }
  if (item.diff) {
    card.append(renderDiff(item.diff));
    const path = item.path;
    if (path) {
      const pending = ctx.pendingHunks(path);
      const actions = h('div', { class: 'edit-actions' });
      if (pending > 0) {
        actions.append(
          h('span', { class: 'review-state' }, t('{0} to review', changeCount(pending))),
          button(t('Accept'), () => ctx.post({ type: 'accept', path }), { icon: 'check' }),
          button(t('Reject'), () => ctx.post({ type: 'reject', path }), { icon: 'discard', secondary: true }),
        );
      }
      const settled = pending > 0 ? undefined : ctx.settled?.(path);
      const outcome = !settled
        ? undefined
        : settled.rejected === 0
          ? 'accepted'
          : settled.accepted === 0
            ? 'rejected'
            : 'mixed';
      if (settled && outcome) {
        const label =
          outcome === 'accepted'
            ? t('Accepted')
            : outcome === 'rejected'
              ? t('Rejected — the file is back to its earlier content')
              : t('{0} accepted, {1} rejected', settled.accepted, settled.rejected);
        actions.append(
          h(
            'span',
            { class: 'review-state', title: t('What you decided in the review') },
            icon(outcome === 'rejected' ? 'discard' : 'check'),
            label,
          ),
        );
      }
      actions.append(
        button(t('Open diff'), () => ctx.post({ type: 'openDiff', path }), { icon: 'diff', secondary: true }),
      );
      card.append(actions);
      card.dataset['review'] = pending > 0 ? 'pending' : (outcome ?? 'settled');
    }
  }
  return card;
}

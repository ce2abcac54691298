// File references in Keel's answers become links that open the file at the line: `src/greet.js:3`,
// `src/greet.js:3:7`, `src/greet.js#L3`, and Markdown links whose target is a path (relative,
// absolute, or file://). The webview only says which path and line; the host resolves the path,
// refuses anything outside the workspace and opens the editor. Pure parsing here (unit-tested);
// the DOM walk is in linkifyFileRefs.

export interface FileRef {
  readonly path: string;
  /** 1-based. */
  readonly line?: number;
  readonly column?: number;
}

const SCHEME = /^[a-z][a-z0-9+.-]*:/i;
/** A path segment: no spaces, no characters that end a reference in prose. */
const SEGMENT = String.raw`[\w@+-][\w@.+-]*`;
/** A path with a file extension: `greet.js`, `src/greet.js`, `./a/b.test.ts`, `/abs/x.py`. */
const PATH = String.raw`(?:\.{1,2}/|/)?(?:${SEGMENT}/)*[\w@+-][\w@+-]*(?:\.[\w@+-]+)*\.[A-Za-z][\w]{0,9}`;
/** `path:line[:col]` anywhere in prose or code spans. */
export const PATH_LINE = new RegExp(
  String.raw`(?<![\w/.@-])(${PATH}):(\d{1,7})(?::(\d{1,5}))?(?![\w/])`,
  'g',
);
const WHOLE_PATH = new RegExp(`^${PATH}$`);
const LINE_FRAGMENT = /^L(\d{1,7})(?:C(\d{1,5}))?(?:-L?\d{1,7}(?:C\d{1,5})?)?$/i;

function positive(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const n = Number.parseInt(text, 10);
  return Number.isSafeInteger(n) && n > 0 ? n : undefined;
}

function ref(path: string, line?: string, column?: string): FileRef {
  const l = positive(line);
  const c = l !== undefined ? positive(column) : undefined;
  return { path, ...(l !== undefined ? { line: l } : {}), ...(c !== undefined ? { column: c } : {}) };
}

/**
 * The file a Markdown link points at, or undefined for web links, anchors and anything that is not
 * a path. `src/a.ts#L3`, `src/a.ts:3`, `./a.ts`, `/abs/a.ts`, `file:///abs/a.ts#L3`.
 */
export function fileRefFromHref(href: string): FileRef | undefined {
  let value = href.trim();
  if (!value || value.startsWith('#') || value.startsWith('//') || value.length > 4096) return undefined;
  if (/^file:/i.test(value)) {
    try {
      const url = new URL(value);
      if (url.host && url.host !== 'localhost') return undefined;
      value = decodeURIComponent(url.pathname) + url.hash;
    } catch {
      return undefined;
    }
  } else if (SCHEME.test(value) && !/^[a-z]:[\\/]/i.test(value)) {
    return undefined;
  }
  let fragment: string | undefined;
  const hash = value.indexOf('#');
  if (hash >= 0) {
    fragment = value.slice(hash + 1);
    value = value.slice(0, hash);
  }
  try {
    value = decodeURIComponent(value);
  } catch {
    // keep it as written
  }
  const withLine = /^(.*?):(\d{1,7})(?::(\d{1,5}))?$/.exec(value);
  if (withLine) return withLine[1] ? ref(withLine[1], withLine[2], withLine[3]) : undefined;
  if (!value || value.endsWith('/') || value.includes('\0')) return undefined;
  const lines = fragment ? LINE_FRAGMENT.exec(fragment) : null;
  return lines ? ref(value, lines[1], lines[2]) : ref(value);
}

/** A code span that is a file reference: `src/a.ts:3`, `src/a.ts` (with a folder), `a.ts:3`. */
export function fileRefFromCode(text: string): FileRef | undefined {
  const value = text.trim();
  const withLine = new RegExp(String.raw`^(${PATH}):(\d{1,7})(?::(\d{1,5}))?$`).exec(value);
  if (withLine) return ref(withLine[1]!, withLine[2], withLine[3]);
  // Without a line, only something that is clearly a path (a folder in it): `console.log` is not a file.
  if (value.includes('/') && WHOLE_PATH.test(value) && !value.startsWith('//')) return ref(value);
  return undefined;
}

/** A `path:line` reference found in prose, with the text it was written as. */
export interface FoundRef {
  readonly target: FileRef;
  readonly text: string;
}

/** Splits prose into text and `path:line` references. */
export function splitFileRefs(text: string): (string | FoundRef)[] {
  const out: (string | FoundRef)[] = [];
  let last = 0;
  for (const m of text.matchAll(PATH_LINE)) {
    const at = m.index ?? 0;
    if (at > last) out.push(text.slice(last, at));
    out.push({ target: ref(m[1]!, m[2], m[3]), text: m[0] });
    last = at + m[0].length;
  }
  if (last < text.length) out.push(text.slice(last));
  return out;
}

/** The href a Markdown link to a file is kept under until linkifyFileRefs turns it into a link. */
export function canonicalHref(target: FileRef): string {
  const line = target.line !== undefined ? `#L${target.line}${target.column ? `C${target.column}` : ''}` : '';
  return `${target.path}${line}`;
}

export function describeRef(target: FileRef): string {
  return `Open ${target.path}${target.line !== undefined ? ` at line ${target.line}` : ''}`;
}

/** Makes `a.file-link` elements out of every file reference in rendered Markdown. */
export function linkifyFileRefs(root: HTMLElement, open: (target: FileRef) => void): void {
  const link = (target: FileRef, ...children: Node[]): HTMLElement => {
    const a = document.createElement('a');
    a.className = 'file-link';
    // No href: VS Code's webview would try to follow one itself. A link role, focusable, Enter opens.
    a.setAttribute('role', 'link');
    a.tabIndex = 0;
    a.title = describeRef(target);
    a.dataset['path'] = target.path;
    if (target.line !== undefined) a.dataset['line'] = String(target.line);
    a.append(...children);
    const go = (event: Event) => {
      event.preventDefault();
      event.stopPropagation();
      open(target);
    };
    a.addEventListener('click', go);
    a.addEventListener('keydown', (event) => {
      if (event.key === 'Enter') go(event);
    });
    return a;
  };
  // Markdown links to files (markdownHtml.ts keeps them as `a.file-ref` with their href).
  for (const a of Array.from(root.querySelectorAll<HTMLAnchorElement>('a.file-ref'))) {
    const target = fileRefFromHref(a.getAttribute('href') ?? '');
    a.replaceWith(
      target ? link(target, ...Array.from(a.childNodes)) : document.createTextNode(a.textContent ?? ''),
    );
  }
  // Code spans (not code blocks) that are a reference.
  for (const code of Array.from(root.querySelectorAll('code'))) {
    if (code.closest('pre, a')) continue;
    const target = fileRefFromCode(code.textContent ?? '');
    if (target) code.replaceWith(link(target, code.cloneNode(true)));
  }
  // `path:line` in prose.
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  const texts: Text[] = [];
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const parent = n.parentElement;
    if (parent?.closest('pre, code, a')) continue;
    if (/:\d/.test(n.textContent ?? '')) texts.push(n as Text);
  }
  for (const node of texts) {
    const parts = splitFileRefs(node.textContent ?? '');
    if (parts.length === 1 && typeof parts[0] === 'string') continue;
    node.replaceWith(
      ...parts.map((p) =>
        typeof p === 'string' ? document.createTextNode(p) : link(p.target, document.createTextNode(p.text)),
      ),
    );
  }
}

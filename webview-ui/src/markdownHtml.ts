import { Marked, type Tokens } from 'marked';
import { canonicalHref, fileRefFromHref } from './fileLinks.ts';

// Markdown → HTML, before sanitizing. Raw HTML in model output is shown as text, not interpreted
// (a model writing `<div>` in prose means code), and images become links: the panel loads no
// remote resources. DOMPurify (markdown.ts) still runs on the result as a second line of defence.

const ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c] ?? c);
}

/** Links that may be followed (VS Code opens them outside the webview); others become plain text. */
const SAFE_LINK = /^(https?:|mailto:)/i;

type RendererThis = { parser: { parseInline(tokens: Tokens.Generic[]): string } };

const marked = new Marked({
  gfm: true,
  breaks: false,
  async: false,
  renderer: {
    html({ text }: Tokens.HTML | Tokens.Tag): string {
      return escapeHtml(text);
    },
    link(this: RendererThis, { href, title, tokens }: Tokens.Link): string {
      const label = this.parser.parseInline(tokens);
      if (!SAFE_LINK.test(href)) {
        // A link to a file in the workspace: kept (as a relative href) for linkifyFileRefs.
        const file = fileRefFromHref(href);
        return file ? `<a class="file-ref" href="${escapeHtml(canonicalHref(file))}">${label}</a>` : label;
      }
      const titleAttr = title ? ` title="${escapeHtml(title)}"` : '';
      return `<a href="${escapeHtml(href)}"${titleAttr}>${label}</a>`;
    },
    image({ href, text }: Tokens.Image): string {
      const label = escapeHtml(text || href);
      return SAFE_LINK.test(href) ? `<a href="${escapeHtml(href)}">${label}</a>` : label;
    },
  },
});

export function markdownToHtml(text: string): string {
  return marked.parse(text) as string;
}

// A YAML-frontmatter reader for SKILL.md, deliberately small: the Agent Skills standard only needs
// string scalars (plain, quoted, folded `>` / literal `|`) and one level of nested string maps
// (`metadata:`). Anything richer is reported as an error rather than half-understood.

export type FrontmatterValue = string | { readonly [key: string]: string };

export type FrontmatterResult =
  | { readonly ok: true; readonly data: Readonly<Record<string, FrontmatterValue>>; readonly body: string }
  | { readonly ok: false; readonly error: string };

const KEY_LINE = /^([A-Za-z0-9_-]+):(?:\s+(.*))?$/;

function unquote(raw: string, line: number): string {
  const value = raw.trim();
  if (value.startsWith('"')) {
    if (!value.endsWith('"') || value.length < 2)
      throw new Error(`line ${line}: unterminated double-quoted string`);
    try {
      return JSON.parse(value) as string;
    } catch {
      throw new Error(`line ${line}: invalid double-quoted string`);
    }
  }
  if (value.startsWith("'")) {
    if (!value.endsWith("'") || value.length < 2)
      throw new Error(`line ${line}: unterminated single-quoted string`);
    return value.slice(1, -1).replace(/''/g, "'");
  }
  // A plain scalar ends at a comment.
  const hash = value.search(/\s#/);
  return (hash >= 0 ? value.slice(0, hash) : value).trim();
}

function indentOf(line: string): number {
  return line.length - line.trimStart().length;
}

/** Collects the indented lines of a block scalar or nested map starting at `start`. */
function indentedBlock(lines: readonly string[], start: number): { block: string[]; next: number } {
  const block: string[] = [];
  let i = start;
  while (i < lines.length) {
    const line = lines[i]!;
    if (line.trim().length > 0 && indentOf(line) === 0) break;
    block.push(line);
    i++;
  }
  while (block.length > 0 && block[block.length - 1]!.trim() === '') block.pop();
  return { block, next: i };
}

function blockScalar(block: readonly string[], style: string): string {
  const indent = Math.min(...block.filter((l) => l.trim()).map(indentOf));
  const lines = block.map((l) => l.slice(Number.isFinite(indent) ? indent : 0));
  if (style.startsWith('|')) return lines.join('\n');
  // Folded: single newlines become spaces, blank lines stay paragraph breaks.
  return lines
    .join('\n')
    .split(/\n{2,}/)
    .map((p) => p.replace(/\n/g, ' ').trim())
    .join('\n');
}

export function parseFrontmatter(text: string): FrontmatterResult {
  const normalized = text.replace(/^\uFEFF/, '').replace(/\r\n/g, '\n');
  if (!normalized.startsWith('---\n')) {
    return { ok: false, error: 'SKILL.md must start with a YAML frontmatter block delimited by "---" lines' };
  }
  const end = normalized.indexOf('\n---', 3);
  if (end < 0) return { ok: false, error: 'the frontmatter block is not closed by a "---" line' };
  const afterEnd = normalized.indexOf('\n', end + 4);
  const body = afterEnd < 0 ? '' : normalized.slice(afterEnd + 1);
  const lines = normalized.slice(4, end).split('\n');
  const data: Record<string, FrontmatterValue> = {};
  try {
    let i = 0;
    while (i < lines.length) {
      const line = lines[i]!;
      if (line.trim() === '' || line.trimStart().startsWith('#')) {
        i++;
        continue;
      }
      if (indentOf(line) > 0) throw new Error(`line ${i + 1}: unexpected indentation`);
      const match = KEY_LINE.exec(line);
      if (!match) throw new Error(`line ${i + 1}: expected "key: value"`);
      const key = match[1]!;
      if (key in data) throw new Error(`line ${i + 1}: duplicate key "${key}"`);
      const rest = (match[2] ?? '').trim();
      if (rest === '' || rest === '|' || rest === '>' || /^[|>][+-]?$/.test(rest)) {
        const { block, next } = indentedBlock(lines, i + 1);
        if (rest === '') {
          const map: Record<string, string> = {};
          for (const [offset, entry] of block.entries()) {
            if (entry.trim() === '' || entry.trimStart().startsWith('#')) continue;
            const m = KEY_LINE.exec(entry.trim());
            if (!m) throw new Error(`line ${i + 2 + offset}: expected "key: value" inside "${key}"`);
            map[m[1]!] = unquote(m[2] ?? '', i + 2 + offset);
          }
          data[key] = block.length === 0 ? '' : map;
        } else {
          data[key] = blockScalar(block, rest);
        }
        i = next;
        continue;
      }
      if (rest.startsWith('[') || rest.startsWith('{')) {
        // Flow collections are legal YAML but not part of the fields we read; keep the raw text.
        data[key] = rest;
      } else {
        data[key] = unquote(rest, i + 1);
      }
      i++;
    }
  } catch (error) {
    return { ok: false, error: `invalid frontmatter: ${(error as Error).message}` };
  }
  return { ok: true, data, body };
}

// Bash brace expansion of unquoted literals (`{rm,-rf,/}`, `a{1..3}`), bounded.

export const MAX_BRACE_ALTERNATIVES = 64;

function braceRange(body: string): string[] | undefined {
  const m = /^(-?\d+|[a-zA-Z])\.\.(-?\d+|[a-zA-Z])(?:\.\.(-?\d+))?$/.exec(body);
  if (!m) return undefined;
  const [, a = '', b = '', stepText] = m;
  const numeric = /\d/.test(a) && /\d/.test(b);
  if (!numeric && (/\d/.test(a) || /\d/.test(b))) return undefined;
  const from = numeric ? Number(a) : a.charCodeAt(0);
  const to = numeric ? Number(b) : b.charCodeAt(0);
  const step = Math.abs(Number(stepText ?? 1)) || 1;
  const out: string[] = [];
  const dir = from <= to ? 1 : -1;
  for (let v = from; dir > 0 ? v <= to : v >= to; v += dir * step) {
    out.push(numeric ? String(v) : String.fromCharCode(v));
    if (out.length >= MAX_BRACE_ALTERNATIVES) break;
  }
  return out;
}

/** Bash brace expansion of an unquoted literal (`{rm,-rf,/}`, `a{1..3}`), escapes respected. */
export function expandBraces(s: string): string[] {
  for (let i = 0; i < s.length; i++) {
    if (s[i] === '\\') {
      i++;
      continue;
    }
    if (s[i] !== '{') continue;
    let depth = 0;
    let close = -1;
    const commas: number[] = [];
    for (let j = i; j < s.length; j++) {
      const c = s[j];
      if (c === '\\') j++;
      else if (c === '{') depth++;
      else if (c === '}' && --depth === 0) {
        close = j;
        break;
      } else if (c === ',' && depth === 1) commas.push(j);
    }
    if (close === -1) return [s];
    const body = s.slice(i + 1, close);
    let options: string[] | undefined;
    if (commas.length > 0) {
      const cuts = [i, ...commas, close];
      options = cuts.slice(0, -1).map((at, k) => s.slice(at + 1, cuts[k + 1]));
    } else options = braceRange(body);
    if (!options) return expandBraces(s.slice(i + 1)).map((rest) => s.slice(0, i + 1) + rest);
    const out: string[] = [];
    for (const option of options) {
      for (const x of expandBraces(s.slice(0, i) + option + s.slice(close + 1))) {
        out.push(x);
        if (out.length >= MAX_BRACE_ALTERNATIVES) return out;
      }
    }
    return out;
  }
  return [s];
}

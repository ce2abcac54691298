// Text codec for edits: decode a file's bytes into a JS string plus the format facts needed to write
// it back byte-identical outside the edited span (BOM, encoding, dominant line ending).
// Invariant: encode(decode(bytes)) === bytes for every file that decodes.

export type TextEncoding = 'utf8' | 'utf16le' | 'utf16be' | 'latin1';
export type Eol = '\n' | '\r\n';

export interface TextFormat {
  readonly encoding: TextEncoding;
  readonly bom: boolean;
  /** Dominant line ending; undefined when the file has no line break. */
  readonly eol: Eol | undefined;
}

export type Decoded =
  | { readonly ok: true; readonly text: string; readonly format: TextFormat }
  | { readonly ok: false; readonly reason: 'binary' };

export const DEFAULT_FORMAT: TextFormat = { encoding: 'utf8', bom: false, eol: undefined };

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

export function hasLoneSurrogate(text: string): boolean {
  return LONE_SURROGATE.test(text);
}

export function detectEol(text: string): Eol | undefined {
  let crlf = 0;
  let lf = 0;
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) {
    if (i > 0 && text.charCodeAt(i - 1) === 13) crlf++;
    else lf++;
  }
  if (crlf === 0 && lf === 0) return undefined;
  return crlf > lf ? '\r\n' : '\n';
}

/** Rewrite every line break (CRLF or LF) in `text` to `eol`; lone CRs are content, left alone. */
export function convertEol(text: string, eol: Eol | undefined): string {
  if (eol === undefined) return text;
  return text.replace(/\r?\n/g, eol);
}

function swap16(bytes: Uint8Array): Uint8Array {
  const out = new Uint8Array(bytes.length);
  for (let i = 0; i + 1 < bytes.length; i += 2) {
    out[i] = bytes[i + 1]!;
    out[i + 1] = bytes[i]!;
  }
  return out;
}

function tryDecode(label: 'utf-8' | 'utf-16le', bytes: Uint8Array): string | undefined {
  try {
    return new TextDecoder(label, { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    return undefined;
  }
}

export function decodeText(bytes: Uint8Array): Decoded {
  const b0 = bytes[0];
  const b1 = bytes[1];
  if (bytes.length >= 2 && ((b0 === 0xff && b1 === 0xfe) || (b0 === 0xfe && b1 === 0xff))) {
    const le = b0 === 0xff;
    const body = bytes.subarray(2);
    if (body.length % 2 !== 0) return { ok: false, reason: 'binary' };
    const text = tryDecode('utf-16le', le ? body : swap16(body));
    if (text === undefined || text.includes('\0')) return { ok: false, reason: 'binary' };
    return {
      ok: true,
      text,
      format: { encoding: le ? 'utf16le' : 'utf16be', bom: true, eol: detectEol(text) },
    };
  }
  const bom = bytes.length >= 3 && b0 === 0xef && b1 === 0xbb && bytes[2] === 0xbf;
  const body = bom ? bytes.subarray(3) : bytes;
  if (body.includes(0)) return { ok: false, reason: 'binary' };
  const utf8 = tryDecode('utf-8', body);
  if (utf8 !== undefined)
    return { ok: true, text: utf8, format: { encoding: 'utf8', bom, eol: detectEol(utf8) } };
  if (bom) return { ok: false, reason: 'binary' };
  // Not UTF-8: a legacy single-byte file. Latin-1 maps every byte to one code point and back, so
  // whatever the real code page, the bytes outside the edit survive unchanged.
  const latin1 = Buffer.from(body).toString('latin1');
  return { ok: true, text: latin1, format: { encoding: 'latin1', bom: false, eol: detectEol(latin1) } };
}

export type Encoded =
  | { readonly ok: true; readonly bytes: Uint8Array }
  | { readonly ok: false; readonly reason: string };

export function encodeText(text: string, format: TextFormat): Encoded {
  if (hasLoneSurrogate(text)) return { ok: false, reason: 'the text contains an unpaired UTF-16 surrogate' };
  switch (format.encoding) {
    case 'utf8': {
      const body = Buffer.from(text, 'utf8');
      return { ok: true, bytes: format.bom ? Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), body]) : body };
    }
    case 'utf16le':
    case 'utf16be': {
      const le = Buffer.from(text, 'utf16le');
      const body = format.encoding === 'utf16le' ? le : swap16(le);
      const bom = format.encoding === 'utf16le' ? [0xff, 0xfe] : [0xfe, 0xff];
      return { ok: true, bytes: format.bom ? Buffer.concat([Buffer.from(bom), body]) : new Uint8Array(body) };
    }
    case 'latin1': {
      const bad = /[^\u0000-\u00ff]/.exec(text);
      if (bad) {
        return {
          ok: false,
          reason: `the file is a single-byte (Latin-1) file and ${JSON.stringify(bad[0])} cannot be stored in it`,
        };
      }
      return { ok: true, bytes: Buffer.from(text, 'latin1') };
    }
  }
}

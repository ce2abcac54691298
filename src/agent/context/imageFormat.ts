import type { ImageMediaType } from './images.ts';

// What an image file's own structure says: its width and height, read from the header each format
// defines (PNG IHDR, GIF logical screen, WebP VP8/VP8L/VP8X, JPEG SOFn), and whether its structure
// holds together. No pixels are decoded (no dependency): a file that passes can still be damaged
// inside, but a file that only starts with an image's magic bytes does not pass.

export interface ImageSize {
  readonly width: number;
  readonly height: number;
}

const u16be = (b: Uint8Array, i: number) => ((b[i] ?? 0) << 8) | (b[i + 1] ?? 0);
const u16le = (b: Uint8Array, i: number) => (b[i] ?? 0) | ((b[i + 1] ?? 0) << 8);
const u24le = (b: Uint8Array, i: number) => u16le(b, i) | ((b[i + 2] ?? 0) << 16);
const u32be = (b: Uint8Array, i: number) => ((u16be(b, i) << 16) | u16be(b, i + 2)) >>> 0;
const u32le = (b: Uint8Array, i: number) => (u16le(b, i) | (u16le(b, i + 2) << 16)) >>> 0;
const ascii = (b: Uint8Array, from: number, to: number) => String.fromCharCode(...b.subarray(from, to));

function sized(width: number, height: number): ImageSize | undefined {
  return width > 0 && height > 0 ? { width, height } : undefined;
}

function pngSizeOf(b: Uint8Array): ImageSize | undefined {
  if (b.length < 24 || ascii(b, 12, 16) !== 'IHDR') return undefined;
  return sized(u32be(b, 16), u32be(b, 20));
}

function gifSizeOf(b: Uint8Array): ImageSize | undefined {
  const version = ascii(b, 0, 6);
  if (b.length < 13 || (version !== 'GIF87a' && version !== 'GIF89a')) return undefined;
  return sized(u16le(b, 6), u16le(b, 8));
}

function webpSizeOf(b: Uint8Array): ImageSize | undefined {
  if (b.length < 30) return undefined;
  switch (ascii(b, 12, 16)) {
    case 'VP8 ':
      // A key frame: start code 9d 01 2a, then 14-bit width and height.
      if (b[23] !== 0x9d || b[24] !== 0x01 || b[25] !== 0x2a) return undefined;
      return sized(u16le(b, 26) & 0x3fff, u16le(b, 28) & 0x3fff);
    case 'VP8L': {
      if (b[20] !== 0x2f) return undefined;
      const bits = u32le(b, 21);
      return sized((bits & 0x3fff) + 1, ((bits >>> 14) & 0x3fff) + 1);
    }
    case 'VP8X':
      return sized(u24le(b, 24) + 1, u24le(b, 27) + 1);
    default:
      return undefined;
  }
}

/** Walks the JPEG markers up to the first frame header (SOFn); undefined when the walk breaks first. */
function jpegSizeOf(b: Uint8Array): ImageSize | undefined {
  let i = 2;
  while (i + 4 <= b.length) {
    if (b[i] !== 0xff) return undefined;
    const marker = b[i + 1]!;
    if (marker === 0xff) {
      i++; // fill byte
      continue;
    }
    if (marker === 0x01 || (marker >= 0xd0 && marker <= 0xd7)) {
      i += 2;
      continue;
    }
    if (marker === 0xd9 || marker === 0xda) return undefined; // end of image or scan data before a frame
    const length = u16be(b, i + 2);
    if (length < 2) return undefined;
    const frame = marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc;
    if (frame) return i + 9 <= b.length ? sized(u16be(b, i + 7), u16be(b, i + 5)) : undefined;
    i += 2 + length;
  }
  return undefined;
}

/** Width and height as the image's header says, or undefined when the header is missing or broken. */
export function imageSize(bytes: Uint8Array, type: ImageMediaType): ImageSize | undefined {
  switch (type) {
    case 'image/png':
      return pngSizeOf(bytes);
    case 'image/gif':
      return gifSizeOf(bytes);
    case 'image/webp':
      return webpSizeOf(bytes);
    case 'image/jpeg':
      return jpegSizeOf(bytes);
  }
}

let crcTable: Uint32Array | undefined;
function crc32(bytes: Uint8Array): number {
  if (!crcTable) {
    crcTable = new Uint32Array(256);
    for (let n = 0; n < 256; n++) {
      let c = n;
      for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
      crcTable[n] = c >>> 0;
    }
  }
  let c = ~0;
  for (const byte of bytes) c = crcTable[(c ^ byte) & 0xff]! ^ (c >>> 8);
  return ~c >>> 0;
}

/** Every chunk's CRC right, IHDR first, image data present, IEND last (a truncated or patched file fails). */
function pngIntact(b: Uint8Array): boolean {
  let i = 8;
  let first = true;
  let data = false;
  while (i + 12 <= b.length) {
    const length = u32be(b, i);
    const type = ascii(b, i + 4, i + 8);
    if (i + 12 + length > b.length) return false;
    if (first && type !== 'IHDR') return false;
    first = false;
    if (crc32(b.subarray(i + 4, i + 8 + length)) !== u32be(b, i + 8 + length)) return false;
    if (type === 'IDAT') data = true;
    if (type === 'IEND') return data;
    i += 12 + length;
  }
  return false;
}

/**
 * Whether the file holds together as its format says, as far as can be seen without decoding pixels:
 * PNG chunks and CRCs, the RIFF length of a WebP, a JPEG's markers up to a frame header and a scan,
 * a GIF's image descriptor and trailer.
 */
export function imageIntact(bytes: Uint8Array, type: ImageMediaType): boolean {
  if (!imageSize(bytes, type)) return false;
  switch (type) {
    case 'image/png':
      return pngIntact(bytes);
    case 'image/webp':
      return u32le(bytes, 4) + 8 <= bytes.length;
    case 'image/gif':
      // An image descriptor after the header, and the trailer byte at the end.
      return bytes.indexOf(0x2c, 13) > 0 && bytes[bytes.length - 1] === 0x3b;
    case 'image/jpeg':
      // A frame header was found; scan data must follow it.
      for (let i = 2; i + 1 < bytes.length; i++) if (bytes[i] === 0xff && bytes[i + 1] === 0xda) return true;
      return false;
  }
}

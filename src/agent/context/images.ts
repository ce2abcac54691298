import { imageSize } from './imageFormat.ts';

// Images the user attaches to a message (a pasted screenshot in the panel, `@shot.png` in the CLI):
// base64 in the user message, sent as Anthropic `image` blocks in that message only (P1: the prefix
// never changes; P2: the message is appended like any other and kept in the session log, so a
// reload shows it again).
//
// Threat: an image is untrusted bytes from the clipboard or the workspace. It is bounded (5 MB decoded,
// the API's own limit per image; at most 8000 px a side; at most 20 per message), its media type is
// the one its first bytes say (a "PNG" that is something else is refused), and it reaches the model as
// an image block only, never as text. A Read of an image file (tools/fs/image.ts) sends the image as
// an image block inside its tool_result, under the same limits and stricter structure checks.

export const IMAGE_MEDIA_TYPES = ['image/png', 'image/jpeg', 'image/gif', 'image/webp'] as const;
export type ImageMediaType = (typeof IMAGE_MEDIA_TYPES)[number];

/** The API refuses an image over 5 MB. */
export const MAX_IMAGE_BYTES = 5 * 1024 * 1024;
/** The API refuses an image wider or taller than this. */
export const MAX_IMAGE_SIDE = 8000;
export const MAX_IMAGES_PER_MESSAGE = 20;
/** What one image costs in context, about (the API scales images to ~1.15 megapixels: ~1600 tokens). */
export const IMAGE_TOKENS = 1600;

export interface ImageAttachment {
  readonly mediaType: ImageMediaType;
  /** Base64 of the image's bytes. */
  readonly data: string;
  /** The file name it came from, when there was one (shown, never sent). */
  readonly name?: string;
}

/** How much of an image's base64 is decoded to find its header. */
const HEADER_BASE64 = 256 * 1024;

/** The first bytes of a base64 image, enough for its header (a JPEG's frame header comes after its metadata). */
export function headerBytes(data: string): Uint8Array {
  return Uint8Array.from(atob(data.slice(0, HEADER_BASE64)), (c) => c.charCodeAt(0));
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
/** Base64 length of MAX_IMAGE_BYTES (what a schema can bound before decoding). */
export const MAX_IMAGE_BASE64 = Math.ceil(MAX_IMAGE_BYTES / 3) * 4;

/** The media type the bytes themselves say, or undefined when they are none of the four. */
export function sniffImageType(bytes: Uint8Array): ImageMediaType | undefined {
  const at = (i: number) => bytes[i] ?? -1;
  if (at(0) === 0x89 && at(1) === 0x50 && at(2) === 0x4e && at(3) === 0x47) return 'image/png';
  if (at(0) === 0xff && at(1) === 0xd8 && at(2) === 0xff) return 'image/jpeg';
  if (at(0) === 0x47 && at(1) === 0x49 && at(2) === 0x46 && at(3) === 0x38) return 'image/gif';
  const ascii = (from: number, to: number) => String.fromCharCode(...bytes.subarray(from, to));
  if (ascii(0, 4) === 'RIFF' && ascii(8, 12) === 'WEBP') return 'image/webp';
  return undefined;
}

/** Width and height of a PNG (from its IHDR chunk), or undefined. */
export function pngSize(bytes: Uint8Array): { width: number; height: number } | undefined {
  if (bytes.length < 24) return undefined;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  return { width: view.getUint32(16), height: view.getUint32(20) };
}

function mb(n: number): string {
  return `${(n / 1024 / 1024).toFixed(1)} MB`;
}

/**
 * Checks an attachment the way the API would, with a message a user can act on; returns the
 * attachment with the media type its bytes say.
 */
export function checkImage(image: {
  mediaType: string;
  data: string;
  name?: string;
}): { ok: true; image: ImageAttachment } | { ok: false; error: string } {
  const label = image.name ? `"${image.name}"` : 'The image';
  if (!BASE64.test(image.data) || image.data.length % 4 !== 0)
    return { ok: false, error: `${label} is not valid base64 data.` };
  const size = Math.floor((image.data.length * 3) / 4) - (image.data.match(/=+$/)?.[0].length ?? 0);
  if (size > MAX_IMAGE_BYTES)
    return {
      ok: false,
      error: `${label} is ${mb(size)}; images are limited to 5 MB. Scale it down or crop it, and attach it again.`,
    };
  if (size === 0) return { ok: false, error: `${label} is empty.` };
  const bytes = headerBytes(image.data);
  const type = sniffImageType(bytes);
  if (!type)
    return { ok: false, error: `${label} is not a PNG, JPEG, GIF or WebP image (its bytes say otherwise).` };
  const dims = imageSize(bytes, type);
  if (dims && (dims.width > MAX_IMAGE_SIDE || dims.height > MAX_IMAGE_SIDE))
    return {
      ok: false,
      error: `${label} is ${dims.width}×${dims.height} px; images are limited to ${MAX_IMAGE_SIDE} px a side.`,
    };
  return {
    ok: true,
    image: { mediaType: type, data: image.data, ...(image.name ? { name: image.name } : {}) },
  };
}

/** Checks every attachment of a message; the first problem is the error. */
export function checkImages(
  images: readonly { mediaType: string; data: string; name?: string }[],
): { ok: true; images: ImageAttachment[] } | { ok: false; error: string } {
  if (images.length > MAX_IMAGES_PER_MESSAGE)
    return { ok: false, error: `At most ${MAX_IMAGES_PER_MESSAGE} images can be attached to one message.` };
  const out: ImageAttachment[] = [];
  for (const image of images) {
    const checked = checkImage(image);
    if (!checked.ok) return checked;
    out.push(checked.image);
  }
  return { ok: true, images: out };
}

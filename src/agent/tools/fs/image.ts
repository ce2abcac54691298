import { imageIntact, imageSize } from '../../context/imageFormat.ts';
import {
  type ImageAttachment,
  type ImageMediaType,
  MAX_IMAGE_BYTES,
  MAX_IMAGE_SIDE,
} from '../../context/images.ts';
import type { ToolContext } from '../protocol.ts';
import { failure, formatSize } from './common.ts';

// Read of an image file: the image itself, as an image block after the result's text, for a model
// that takes images; a clear "cannot view" for one that does not.
//
// Threat: a hostile repository's "image" (its bytes chosen by the attacker, the model asked to Read
// it). The type is the one the bytes say, never the extension; the file must hold together as that
// format (header, PNG chunk CRCs, a JPEG's frame and scan) and stay within the API's limits (5 MB,
// 8000 px a side) — an image the API refuses would fail every request while it sits in the
// conversation. Nothing of the file reaches the model as text but its size and dimensions.

export interface ImageInfo {
  readonly mediaType: ImageMediaType;
  readonly width: number;
  readonly height: number;
}

const NAMES: Record<ImageMediaType, string> = {
  'image/png': 'PNG',
  'image/jpeg': 'JPEG',
  'image/gif': 'GIF',
  'image/webp': 'WebP',
};

/** The image as the model gets it (its text, its block), or a ToolFailure saying why not. */
export function readImage(
  bytes: Uint8Array,
  type: ImageMediaType,
  display: string,
  ctx: ToolContext,
): { info: ImageInfo; text: string; attachment: ImageAttachment } {
  const kind = NAMES[type];
  const dims = imageSize(bytes, type);
  if (!dims || !imageIntact(bytes, type)) {
    failure(
      'BINARY_FILE',
      `${display} starts like a ${kind} image but is not a valid one (its header or structure is broken); it cannot be shown.`,
      'Do not retry. If the image matters, ask the user what it shows.',
    );
  }
  const described = `${kind} image, ${dims.width}×${dims.height} px, ${formatSize(bytes.length)}`;
  const smaller = 'Ask the user for a smaller copy (scaled down or cropped), or what it shows.';
  if (bytes.length > MAX_IMAGE_BYTES)
    failure('TOO_LARGE', `${display} is a ${described}; the model accepts images up to 5 MB.`, smaller);
  if (dims.width > MAX_IMAGE_SIDE || dims.height > MAX_IMAGE_SIDE) {
    failure(
      'TOO_LARGE',
      `${display} is a ${described}; the model accepts images up to ${MAX_IMAGE_SIDE}×${MAX_IMAGE_SIDE} px.`,
      smaller,
    );
  }
  if (ctx.acceptsImages === false) {
    failure(
      'UNAVAILABLE',
      `${display} is a ${described}; the current model cannot view images.`,
      'Do not retry. Ask the user what it shows, or to switch to a model that accepts images.',
    );
  }
  const refused = ctx.images?.claim(ctx.toolUseId, [dims]);
  if (refused !== undefined) {
    failure(
      'TOO_LARGE',
      `${display} is a ${described}; it was not attached: ${refused}.`,
      'Do not retry. Ask the user what it shows or for a smaller copy; compacting the conversation frees room taken by earlier images.',
    );
  }
  const data = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');
  return {
    info: { mediaType: type, ...dims },
    text: `${display}: ${described}. The image follows.`,
    attachment: { mediaType: type, data, name: display },
  };
}

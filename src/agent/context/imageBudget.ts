import type { AgentMessage } from '../messages.ts';
import { type ImageSize, imageSize } from './imageFormat.ts';
import { headerBytes, type ImageAttachment, MAX_IMAGE_SIDE, sniffImageType } from './images.ts';
import { buildView } from './view.ts';

// The API's limits on the images of one request, checked before an image enters the conversation.
// A request with more than 20 images takes none larger than 2000 px a side, and none takes more than
// 100. The conversation is re-sent whole every turn, so an image that breaks either rule would fail
// every later request: the session would be stuck until it is compacted or thrown away. Here the
// image that would break the rule is the one refused, with the reason, and the conversation goes on.
//
// Threat: a hostile repository full of large screenshots, and a model asked to Read them all; or a
// user pasting a 4K screenshot into a long conversation. Neither can make the session unusable.

/** Past this many images in one request the API takes only images up to MANY_IMAGES_SIDE a side. */
export const MANY_IMAGES = 20;
export const MANY_IMAGES_SIDE = 2000;
/** The API takes at most this many images in one request. */
export const MAX_IMAGES_PER_REQUEST = 100;

/** Width and height of an attachment from its header; an unreadable header counts as oversized. */
export function attachmentSize(image: ImageAttachment): ImageSize {
  const bytes = headerBytes(image.data);
  const type = sniffImageType(bytes);
  return (type && imageSize(bytes, type)) ?? { width: MAX_IMAGE_SIDE, height: MAX_IMAGE_SIDE };
}

export interface ViewImage extends ImageSize {
  /** What it belongs to: a tool result's tool_use id, or a user message's id. */
  readonly owner: string;
}

// An attachment's size, read once per attachment object (messages are immutable).
const sizes = new WeakMap<ImageAttachment, ImageSize>();
function sizeOf(image: ImageAttachment): ImageSize {
  let size = sizes.get(image);
  if (!size) {
    size = attachmentSize(image);
    sizes.set(image, size);
  }
  return size;
}

/** The images the model's next request would carry: those of the view (pruned results hold none). */
export function imagesInView(transcript: readonly AgentMessage[]): ViewImage[] {
  const out: ViewImage[] = [];
  for (const message of buildView(transcript).messages) {
    if (message.role === 'user')
      for (const image of message.images ?? []) out.push({ owner: message.id, ...sizeOf(image) });
    if (message.role === 'tool_result')
      for (const image of message.images ?? []) out.push({ owner: message.toolUseId, ...sizeOf(image) });
  }
  return out;
}

const side = (s: ImageSize) => Math.max(s.width, s.height);
const px = (s: ImageSize) => `${s.width}×${s.height} px`;

/**
 * Why `incoming` cannot join a request that already carries `existing` (undefined: it can).
 * Every incoming image counts toward the total; the first one that does not fit is named.
 */
export function imageRoom(
  existing: readonly ImageSize[],
  incoming: readonly ImageSize[],
): string | undefined {
  const total = existing.length + incoming.length;
  if (total > MAX_IMAGES_PER_REQUEST)
    return `the conversation already holds ${existing.length} images and a request takes at most ${MAX_IMAGES_PER_REQUEST}`;
  if (total <= MANY_IMAGES) return undefined;
  const large = incoming.find((s) => side(s) > MANY_IMAGES_SIDE);
  if (large)
    return `it is ${px(large)}, and with more than ${MANY_IMAGES} images in the conversation the model takes images up to ${MANY_IMAGES_SIDE}×${MANY_IMAGES_SIDE} px`;
  const earlier = existing.find((s) => side(s) > MANY_IMAGES_SIDE);
  if (earlier)
    return `the conversation already holds ${existing.length} images, one of them ${px(earlier)}; with more than ${MANY_IMAGES} images the model takes images up to ${MANY_IMAGES_SIDE}×${MANY_IMAGES_SIDE} px`;
  return undefined;
}

export interface ImageBudget {
  /**
   * Reserves room for `owner`'s images (a Read's tool_use id) until they are in the transcript, so
   * Reads running side by side cannot together break the rule; the reason when there is no room.
   */
  claim(owner: string, images: readonly ImageSize[]): string | undefined;
  /** Why these images cannot join the conversation now (nothing reserved). */
  check(images: readonly ImageSize[]): string | undefined;
}

export function createImageBudget(transcript: () => readonly AgentMessage[]): ImageBudget {
  const pending = new Map<string, readonly ImageSize[]>();
  const existing = (): ImageSize[] => {
    const messages = transcript();
    // A claim ends once its call's result is in the transcript: counted there from then on (or not
    // at all, when the call ended without its image). Every call gets a result (P2).
    if (pending.size > 0) for (const m of messages) if (m.role === 'tool_result') pending.delete(m.toolUseId);
    return [...imagesInView(messages), ...[...pending.values()].flat()];
  };
  return {
    claim(owner, images) {
      const refused = imageRoom(existing(), images);
      if (refused === undefined) pending.set(owner, images);
      return refused;
    },
    check: (images) => imageRoom(existing(), images),
  };
}

/**
 * A user message's images, when they fit; otherwise the message goes without them and its text says
 * so (the model learns what is missing, the user's words are kept, the log shows what was sent).
 */
export function admitUserImages(
  budget: ImageBudget,
  text: string,
  images: readonly ImageAttachment[] | undefined,
): { text: string; images?: readonly ImageAttachment[]; refused?: string } {
  if (!images?.length) return { text };
  const refused = budget.check(images.map(attachmentSize));
  if (refused === undefined) return { text, images };
  const what = images.length === 1 ? 'an image' : `${images.length} images`;
  return { text: `${text}\n\n[The user attached ${what}; not sent: ${refused}.]`, refused };
}

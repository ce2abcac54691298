import { button, h } from '../dom.ts';
import { t } from '../l10n.ts';

// Images pasted (or dropped) into the input: shown as thumbnails above it, each with a remove button,
// and sent with the next message. Checked here for what a user can fix at once (type, 5 MB); the host
// checks again (src/agent/context/images.ts), since nothing from the webview is trusted.

export const IMAGE_TYPES = ['image/png', 'image/jpeg', 'image/gif', 'image/webp'] as const;
export type ImageType = (typeof IMAGE_TYPES)[number];
const isImageType = (t: string): t is ImageType => (IMAGE_TYPES as readonly string[]).includes(t);

export interface ImageDraft {
  readonly mediaType: ImageType;
  /** Base64 of the bytes. */
  readonly data: string;
  readonly name?: string;
}

export const MAX_IMAGE_BYTES = 5 * 1024 * 1024;
const MAX_IMAGES = 20;

export interface Attachments {
  readonly element: HTMLElement;
  /** Adds the image files among `files`; says what was refused through `onError`. */
  add(files: readonly File[]): Promise<void>;
  /** The attached images, and the strip emptied. */
  take(): ImageDraft[];
  readonly count: number;
}

function readBase64(file: File): Promise<string> {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(String(reader.result).replace(/^data:[^,]*,/, ''));
    reader.onerror = () => reject(reader.error ?? new Error('could not read the image'));
    reader.readAsDataURL(file);
  });
}

/** `data:` URL of an image for an <img> (the panel's CSP allows data: images). */
export function imageUrl(image: { mediaType: string; data: string }): string {
  return `data:${image.mediaType};base64,${image.data}`;
}

export function createAttachments(options: { onError(text: string): void; changed(): void }): Attachments {
  const element = h('div', {
    class: 'attachments',
    role: 'list',
    'aria-label': t('Attached images'),
    hidden: true,
  });
  let images: ImageDraft[] = [];

  const render = () => {
    element.replaceChildren(
      ...images.map((image, i) => {
        const label = image.name ?? t('Pasted image {0}', i + 1);
        const remove = button(
          t('Remove {0}', label),
          () => {
            images = images.filter((x) => x !== image);
            render();
            options.changed();
          },
          { icon: 'close', iconOnly: true, secondary: true },
        );
        return h(
          'div',
          { class: 'attachment', role: 'listitem', title: label },
          h('img', { class: 'attachment-thumb', src: imageUrl(image), alt: label }),
          remove,
        );
      }),
    );
    element.hidden = images.length === 0;
  };

  return {
    element,
    async add(files) {
      for (const file of files) {
        if (!file.type.startsWith('image/')) continue;
        const label = file.name && file.name !== 'image.png' ? `"${file.name}"` : t('The pasted image');
        const mediaType = file.type;
        if (!isImageType(mediaType)) {
          options.onError(t('{0} is {1}; Keel can attach PNG, JPEG, GIF or WebP images.', label, file.type));
          continue;
        }
        if (file.size > MAX_IMAGE_BYTES) {
          options.onError(
            t(
              '{0} is {1} MB; images are limited to 5 MB. Scale it down or crop it, and paste it again.',
              label,
              (file.size / 1024 / 1024).toFixed(1),
            ),
          );
          continue;
        }
        if (images.length >= MAX_IMAGES) {
          options.onError(t('At most {0} images can be attached to one message.', MAX_IMAGES));
          break;
        }
        try {
          const data = await readBase64(file);
          images = [...images, { mediaType, data, ...(file.name ? { name: file.name } : {}) }];
        } catch (error) {
          options.onError(t('{0} could not be read: {1}', label, String(error)));
        }
      }
      render();
      options.changed();
    },
    take() {
      const out = images;
      images = [];
      render();
      return out;
    },
    get count() {
      return images.length;
    },
  };
}

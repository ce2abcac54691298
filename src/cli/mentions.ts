import * as fs from 'node:fs';
import * as path from 'node:path';
import {
  checkImage,
  type ImageAttachment,
  MAX_IMAGE_BYTES,
  MAX_IMAGES_PER_MESSAGE,
} from '../agent/context/images.ts';

const IMAGE_FILE = /\.(png|jpe?g|gif|webp)$/i;

function mentionWords(prompt: string): string[] {
  return [...prompt.matchAll(/(?:^|\s)@([^\s@]+)/g)].map((m) => m[1]!.replace(/[.,;:!?)\]]+$/, ''));
}

/** `@path` words naming an existing workspace file: sent as "read this" reminders, never as content (P3). */
export function mentionedFiles(prompt: string, workspace: string): string[] {
  const found = new Set<string>();
  for (const rel of mentionWords(prompt)) {
    if (IMAGE_FILE.test(rel)) continue;
    const abs = path.resolve(workspace, rel);
    if (!abs.startsWith(workspace + path.sep)) continue;
    try {
      if (fs.statSync(abs).isFile()) found.add(path.relative(workspace, abs).split(path.sep).join('/'));
    } catch {
      // not a file: an ordinary word that starts with @
    }
  }
  return [...found];
}

type ImageResult = { ok: true; images: ImageAttachment[] } | { ok: false; error: string };

/**
 * One image file for the prompt: inside the workspace once symlinks are followed, at most 5 MB, and
 * checked as the API would (its bytes, 8000 px). `label` names it in errors (`@x.png`, `--image x.png`).
 * Undefined when it is not a regular file.
 */
function imageFile(
  real: string,
  root: string,
  label: string,
  name: string,
): { ok: true; image: ImageAttachment } | { ok: false; error: string } | undefined {
  if (!real.startsWith(root + path.sep))
    return { ok: false, error: `${label}: the image is outside the workspace (${root}).` };
  const stat = fs.statSync(real);
  if (!stat.isFile()) return undefined;
  if (stat.size > MAX_IMAGE_BYTES)
    return {
      ok: false,
      error: `${label} is ${(stat.size / 1024 / 1024).toFixed(1)} MB; images are limited to 5 MB. Scale it down or crop it.`,
    };
  return checkImage({ mediaType: 'image/png', data: fs.readFileSync(real).toString('base64'), name });
}

/**
 * `@shot.png` (PNG, JPEG, GIF, WebP) in the prompt: the image itself, attached to the message. The file
 * must be inside the workspace once symlinks are followed, and is checked as the API would (its bytes,
 * 5 MB, 8000 px); a problem is an error naming the file, never a silent drop.
 */
export function mentionedImages(prompt: string, workspace: string): ImageResult {
  const images: ImageAttachment[] = [];
  const root = fs.realpathSync(workspace);
  for (const rel of new Set(mentionWords(prompt).filter((w) => IMAGE_FILE.test(w)))) {
    let real: string;
    try {
      real = fs.realpathSync(path.resolve(workspace, rel));
    } catch {
      continue; // no such file: an ordinary word
    }
    const checked = imageFile(real, root, `@${rel}`, rel);
    if (!checked) continue;
    if (!checked.ok) return checked;
    images.push(checked.image);
  }
  return { ok: true, images };
}

/**
 * `--image FILE` (repeatable; relative to the current folder): the same as `@FILE` in the prompt — the
 * same checks and errors — except that a file that is not there is an error too (it was named on
 * purpose). Attached before the prompt's own `@` images.
 */
export function flaggedImages(files: readonly string[], workspace: string): ImageResult {
  const images: ImageAttachment[] = [];
  const root = fs.realpathSync(workspace);
  for (const file of new Set(files)) {
    const label = `--image ${file}`;
    let real: string;
    try {
      real = fs.realpathSync(path.resolve(file));
    } catch {
      return { ok: false, error: `${label}: no such file.` };
    }
    const checked = imageFile(real, root, label, file);
    if (!checked) return { ok: false, error: `${label}: not a file.` };
    if (!checked.ok) return checked;
    images.push(checked.image);
  }
  return { ok: true, images };
}

/** `--image` files, then the prompt's `@` images (one copy of each), at most 20 in all. */
export function promptImages(files: readonly string[], prompt: string, workspace: string): ImageResult {
  const flagged = flaggedImages(files, workspace);
  if (!flagged.ok) return flagged;
  const mentioned = mentionedImages(prompt, workspace);
  if (!mentioned.ok) return mentioned;
  const seen = new Set(flagged.images.map((i) => i.data));
  const images = [...flagged.images, ...mentioned.images.filter((i) => !seen.has(i.data))];
  if (images.length > MAX_IMAGES_PER_MESSAGE)
    return { ok: false, error: `At most ${MAX_IMAGES_PER_MESSAGE} images can be attached to one message.` };
  return { ok: true, images };
}

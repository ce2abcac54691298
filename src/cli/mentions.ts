import * as fs from 'node:fs';
import * as path from 'node:path';
import { checkImage, type ImageAttachment, MAX_IMAGE_BYTES } from '../agent/context/images.ts';

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

/**
 * `@shot.png` (PNG, JPEG, GIF, WebP) in the prompt: the image itself, attached to the message. The file
 * must be inside the workspace once symlinks are followed, and is checked as the API would (its bytes,
 * 5 MB, 8000 px); a problem is an error naming the file, never a silent drop.
 */
export function mentionedImages(
  prompt: string,
  workspace: string,
): { ok: true; images: ImageAttachment[] } | { ok: false; error: string } {
  const images: ImageAttachment[] = [];
  const root = fs.realpathSync(workspace);
  for (const rel of new Set(mentionWords(prompt).filter((w) => IMAGE_FILE.test(w)))) {
    let real: string;
    try {
      real = fs.realpathSync(path.resolve(workspace, rel));
    } catch {
      continue; // no such file: an ordinary word
    }
    if (!real.startsWith(root + path.sep))
      return { ok: false, error: `@${rel}: the image is outside the workspace (${root}).` };
    const stat = fs.statSync(real);
    if (!stat.isFile()) continue;
    if (stat.size > MAX_IMAGE_BYTES)
      return {
        ok: false,
        error: `@${rel} is ${(stat.size / 1024 / 1024).toFixed(1)} MB; images are limited to 5 MB. Scale it down or crop it.`,
      };
    const checked = checkImage({
      mediaType: 'image/png',
      data: fs.readFileSync(real).toString('base64'),
      name: rel,
    });
    if (!checked.ok) return checked;
    images.push(checked.image);
  }
  return { ok: true, images };
}

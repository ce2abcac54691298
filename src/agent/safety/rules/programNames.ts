import * as fs from 'node:fs';

// How a program word is reduced to the name the rules know: versions and variants (python3.12 →
// python), symbolic links (./x → the program it points to), look-alike letters (Cyrillic ѕudo → sudo).

// Names that differ only by version or variant share a rule: python3.12 → python, mkfs.ext4 → mkfs.
export function normalizeProgram(name: string): string {
  const base = name.replace(/\.exe$/i, '');
  const versioned = /^(python|pip|pypy|ruby|perl|php|lua|node|nodejs|pwsh)[\d.]*$/.exec(base);
  if (versioned) {
    const n = versioned[1] as string;
    return n === 'nodejs' ? 'node' : n === 'pypy' ? 'python' : n;
  }
  if (/^mkfs(\..+)?$|^mke2fs$|^mkdosfs$|^mkntfs$/.test(base)) return 'mkfs';
  return base;
}

/** Where a symbolic link used as a program points (`./x` → /usr/bin/rm). */
export function linkTarget(where: string | undefined): string | undefined {
  if (!where) return undefined;
  try {
    return fs.lstatSync(where).isSymbolicLink() ? fs.realpathSync(where) : undefined;
  } catch {
    return undefined;
  }
}

// Latin look-alikes of Cyrillic and Greek letters.
const CONFUSABLE: Record<string, string> = {
  а: 'a',
  в: 'b',
  с: 'c',
  е: 'e',
  ё: 'e',
  һ: 'h',
  і: 'i',
  ј: 'j',
  к: 'k',
  м: 'm',
  н: 'h',
  о: 'o',
  р: 'p',
  ѕ: 's',
  т: 't',
  у: 'y',
  х: 'x',
  ԁ: 'd',
  ԛ: 'q',
  ԝ: 'w',
  α: 'a',
  ο: 'o',
  ρ: 'p',
  ν: 'v',
  τ: 't',
  ι: 'i',
  κ: 'k',
  χ: 'x',
  υ: 'u',
  ѵ: 'v',
  ɡ: 'g',
  ɑ: 'a',
  ℓ: 'l',
};

/** The ASCII name a look-alike program name imitates (NFKC, confusable letters, invisibles removed). */
export function asciiSkeleton(name: string): string {
  return [...name.normalize('NFKC')]
    .map((c) => CONFUSABLE[c.toLowerCase()] ?? c)
    .join('')
    .replace(/[\u200b-\u200f\u2060\ufeff\u00ad]/g, '');
}

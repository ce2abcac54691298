import { providerFromEnv } from '../agent/model/anthropicFamily.ts';
import {
  AuthFileError,
  authFilePath,
  describeProfile,
  readAuthFile,
  resolveProfiles,
} from '../agent/model/profiles.ts';

// `keel doctor`'s auth section: the profiles a run would try, in order, each with its source and a
// masked key (never the key), or why auth.json cannot be used.

export function authReport(env: NodeJS.ProcessEnv = process.env): { text: string; ok: boolean } {
  const file = authFilePath(env);
  try {
    const fromFile = readAuthFile(file);
    const forced = providerFromEnv(env);
    const profiles = resolveProfiles(forced, env);
    const none = profiles.length === 1 && profiles[0]?.name === 'default';
    const lines = [
      `Auth profiles (tried in order${forced ? `; ${forced} only, from CLAUDE_CODE_USE_${forced.toUpperCase()}` : ''}):`,
      ...(none
        ? ['  none: set ANTHROPIC_API_KEY, or list profiles in ' + file]
        : profiles.map((p, i) => `  ${i + 1}. ${describeProfile(p)}`)),
      `  auth file: ${file} (${fromFile.length} profile${fromFile.length === 1 ? '' : 's'})`,
    ];
    return { text: lines.join('\n'), ok: true };
  } catch (e) {
    if (e instanceof AuthFileError) return { text: `Auth profiles:\n  ✖ ${e.message}`, ok: false };
    throw e;
  }
}

import * as fs from 'node:fs';
import * as path from 'node:path';
import { z } from 'zod';
import { lazy } from '../lazy.ts';
import { workspaceStateHome } from './paths.ts';

// The user's approvals of what a workspace supplies, kept outside the workspace
// (`<keelHome>/workspaces/<id>/trust.json`, mode 0600). An approval is bound to the exact content it
// was given for (a hash): when the content changes, it is a new question.

const fileSchema = lazy(() =>
  z.object({
    version: z.literal(1),
    approved: z.record(z.string(), z.object({ hash: z.string(), at: z.number() })),
  }),
);

export type ApprovalRecord = Readonly<Record<string, { readonly hash: string; readonly at: number }>>;

export interface TrustStore {
  readonly file: string;
  read(): ApprovalRecord;
  approve(entries: readonly { readonly id: string; readonly hash: string }[], now: number): void;
  revoke(): void;
}

export function trustStore(workspaceRoot: string, env: NodeJS.ProcessEnv = process.env): TrustStore {
  const file = path.join(workspaceStateHome(workspaceRoot, env), 'trust.json');
  const read = (): ApprovalRecord => {
    let text: string;
    try {
      text = fs.readFileSync(file, 'utf8');
    } catch {
      return {};
    }
    try {
      const parsed = fileSchema().safeParse(JSON.parse(text));
      if (parsed.success) return parsed.data.approved;
    } catch {
      // not JSON
    }
    // A damaged file approves nothing (fail closed); `keel trust` writes a good one again.
    return {};
  };
  return {
    file,
    read,
    approve(entries, now) {
      const approved: Record<string, { hash: string; at: number }> = { ...read() };
      for (const e of entries) approved[e.id] = { hash: e.hash, at: now };
      fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
      const tmp = `${file}.${process.pid}.tmp`;
      fs.writeFileSync(tmp, `${JSON.stringify({ version: 1, approved }, null, 2)}\n`, { mode: 0o600 });
      fs.renameSync(tmp, file);
    },
    revoke() {
      fs.rmSync(file, { force: true });
    },
  };
}

import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { workspaceStateHome } from './paths.ts';

// Keel's own state, recognisable as its own. A repository can commit anything under `.keel/` or
// `keel-task/`, so a file's presence there proves nothing. What Keel writes there it also records
// here, outside the workspace (`<keelHome>/workspaces/<id>/ledger/`), as a content hash: on reading,
// a file (or a record line) whose hash Keel did not record came from somewhere else — the repository,
// or a command — and is treated as the repository's. One small file per tracked path, so two Keel
// processes writing different state files never race on one ledger file.

export const sha256 = (data: string | Uint8Array): string => createHash('sha256').update(data).digest('hex');

export interface StateLedger {
  /** Keel wrote `content` to `rel` (a path relative to the workspace root). */
  recordFile(rel: string, content: string | Uint8Array): void;
  /** Was `content` the last thing Keel wrote to `rel`? */
  isOwnFile(rel: string, content: string | Uint8Array): boolean;
  /** Keel appended `line` (without its newline) to the record file `rel`. */
  recordLine(rel: string, line: string): void;
  /** The hashes of the lines Keel appended to `rel`. */
  ownLines(rel: string): ReadonlySet<string>;
  /** Keel created `rel` (an append-only log whose content changes all the time). */
  recordCreated(rel: string): void;
  isCreatedByKeel(rel: string): boolean;
}

const key = (rel: string) => sha256(rel.split(path.sep).join('/')).slice(0, 32);

export function stateLedger(workspaceRoot: string, env: NodeJS.ProcessEnv = process.env): StateLedger {
  const dir = path.join(workspaceStateHome(workspaceRoot, env), 'ledger');
  const at = (rel: string, ext: string) => path.join(dir, `${key(rel)}.${ext}`);
  const ensure = () => fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const readText = (file: string) => {
    try {
      return fs.readFileSync(file, 'utf8');
    } catch {
      return undefined;
    }
  };
  return {
    recordFile(rel, content) {
      ensure();
      const file = at(rel, 'file');
      const tmp = `${file}.${process.pid}.tmp`;
      fs.writeFileSync(tmp, `${sha256(content)}\n`, { mode: 0o600 });
      fs.renameSync(tmp, file);
    },
    isOwnFile(rel, content) {
      return readText(at(rel, 'file'))?.trim() === sha256(content);
    },
    recordLine(rel, line) {
      ensure();
      fs.appendFileSync(at(rel, 'lines'), `${sha256(line)}\n`, { mode: 0o600 });
    },
    ownLines(rel) {
      return new Set((readText(at(rel, 'lines')) ?? '').split('\n').filter(Boolean));
    },
    recordCreated(rel) {
      ensure();
      fs.writeFileSync(at(rel, 'created'), '', { mode: 0o600 });
    },
    isCreatedByKeel(rel) {
      return fs.existsSync(at(rel, 'created'));
    },
  };
}

/** The ledger for the workspace whose Keel state folder is `stateDir` (`<root>/.keel`). */
export function ledgerForStateDir(stateDir: string, env: NodeJS.ProcessEnv = process.env): StateLedger {
  return stateLedger(path.dirname(stateDir), env);
}

/**
 * Session logs Keel created in this workspace (`.keel/sessions/<id>.jsonl`). A log that came with the
 * repository would put words in the user's mouth on resume, and in MemorySearch's results.
 */
export function sessionLogRel(logPath: string): { stateDir: string; rel: string } {
  const stateDir = path.dirname(path.dirname(logPath));
  return { stateDir, rel: path.relative(path.dirname(stateDir), logPath).split(path.sep).join('/') };
}

export function recordSessionLog(logPath: string, env: NodeJS.ProcessEnv = process.env): void {
  const { stateDir, rel } = sessionLogRel(logPath);
  ledgerForStateDir(stateDir, env).recordCreated(rel);
}

export function isKeelSessionLog(logPath: string, env: NodeJS.ProcessEnv = process.env): boolean {
  const { stateDir, rel } = sessionLogRel(logPath);
  return ledgerForStateDir(stateDir, env).isCreatedByKeel(rel);
}

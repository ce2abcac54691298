import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';

// The harness's own git use (seed 003: one commit per session). Checkpoints never run git; this is
// the long task's contract with the user, who asked for a committed history.

export class GitError extends Error {}

function git(workspace: string, args: string[], input?: string): string {
  try {
    return execFileSync('git', args, {
      cwd: workspace,
      encoding: 'utf8',
      input,
      stdio: ['pipe', 'pipe', 'pipe'],
      env: { ...process.env, GIT_TERMINAL_PROMPT: '0', GIT_EDITOR: 'true', GIT_PAGER: 'cat' },
      maxBuffer: 64 * 1024 * 1024,
    });
  } catch (error) {
    const e = error as { stderr?: string; message: string };
    throw new GitError(`git ${args[0]} failed: ${(e.stderr || e.message).trim()}`);
  }
}

/** Identity flags only when the user has none configured (a fresh machine, CI). */
function identity(workspace: string): string[] {
  const has = (key: string) => {
    try {
      return git(workspace, ['config', key]).trim().length > 0;
    } catch {
      return false;
    }
  };
  return [
    ...(has('user.name') ? [] : ['-c', 'user.name=Keel task harness']),
    ...(has('user.email') ? [] : ['-c', 'user.email=keel@localhost']),
  ];
}

export function isRepository(workspace: string): boolean {
  return fs.existsSync(path.join(workspace, '.git'));
}

export function ensureRepository(workspace: string): boolean {
  if (isRepository(workspace)) return false;
  git(workspace, ['init', '-q']);
  return true;
}

/** `git add -A` + commit; returns the new commit's short hash, or undefined when nothing changed. */
export function commitAll(workspace: string, message: string): string | undefined {
  git(workspace, ['add', '-A']);
  if (git(workspace, ['status', '--porcelain']).trim() === '') return undefined;
  git(workspace, [...identity(workspace), 'commit', '-q', '--no-verify', '-F', '-'], message);
  return git(workspace, ['rev-parse', '--short', 'HEAD']).trim();
}

export function showCommitted(workspace: string, rel: string): string | undefined {
  try {
    return git(workspace, ['show', `HEAD:${rel}`]);
  } catch {
    return undefined;
  }
}

export function logOneline(workspace: string, count: number): string {
  try {
    return git(workspace, ['log', '--oneline', `-${count}`]).trim();
  } catch {
    return '(no commits yet)';
  }
}

export function statusShort(workspace: string): string {
  try {
    return git(workspace, ['status', '--short', '--untracked-files=all']).trim();
  } catch {
    return '';
  }
}

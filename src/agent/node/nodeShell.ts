import { spawn } from 'node:child_process';
import type { ShellPort, ShellRunOptions, ShellRunResult } from '../host.ts';

// Each command runs in its own process group so abort/timeout can kill the whole tree.
export function createNodeShell(): ShellPort {
  return {
    run(options: ShellRunOptions): Promise<ShellRunResult> {
      const started = Date.now();
      return new Promise((resolve) => {
        const child = spawn('/bin/bash', ['-c', options.command], {
          cwd: options.cwd,
          env: options.env,
          detached: true,
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        let stdout = '';
        let stderr = '';
        let timedOut = false;
        let aborted = false;
        const killTree = () => {
          if (child.pid === undefined) return;
          try {
            process.kill(-child.pid, 'SIGKILL');
          } catch {
            // already gone
          }
        };
        const timer = setTimeout(() => {
          timedOut = true;
          killTree();
        }, options.timeoutMs);
        const onAbort = () => {
          aborted = true;
          killTree();
        };
        if (options.signal?.aborted) onAbort();
        options.signal?.addEventListener('abort', onAbort, { once: true });
        child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
          stdout += chunk;
          options.onOutput?.(chunk, 'stdout');
        });
        child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
          stderr += chunk;
          options.onOutput?.(chunk, 'stderr');
        });
        const finish = (exitCode: number | null, signal: string | null) => {
          clearTimeout(timer);
          options.signal?.removeEventListener('abort', onAbort);
          // Background children that outlived the shell would keep pipes open: kill the group.
          killTree();
          resolve({ exitCode, signal, stdout, stderr, timedOut, aborted, durationMs: Date.now() - started });
        };
        child.on('error', (error) => {
          stderr += String(error);
          finish(null, null);
        });
        child.on('close', (code, signal) => finish(code, signal));
      });
    },
  };
}

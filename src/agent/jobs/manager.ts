import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Host } from '../host.ts';
import { renderDenials } from '../safety/sandbox/denials.ts';

// Background commands (seed 000 §6): a job runs through the host's Shell port (so it gets the same
// process-tree kill, and later the same sandbox, as a foreground command), its output goes to
// `.keel/jobs/<id>.log`, and when it ends (or prints a line matching `notify_on`) the harness queues a
// notice that the session appends before the next model call. Only this module writes notices.

export type JobStatus = 'running' | 'exited' | 'killed' | 'failed';

export interface JobInfo {
  readonly id: string;
  readonly command: string;
  readonly status: JobStatus;
  readonly exitCode: number | null;
  readonly startedAt: number;
  readonly endedAt?: number;
  /** Absolute path of the job's output log. */
  readonly logPath: string;
  /** The run that started it (Stop ends that run's jobs). */
  readonly runId: string;
}

export interface JobStart {
  readonly command: string;
  readonly cwd: string;
  readonly env: Readonly<Record<string, string>>;
  readonly timeoutMs: number;
  readonly runId: string;
  /** A line matching this (JS regex) also sends a notice. */
  readonly notifyOn?: RegExp;
  /** OS sandbox mode for the job (see ShellRunOptions.sandbox); default 'on'. */
  readonly sandbox?: 'on' | 'network' | 'off';
}

export interface JobNotice {
  readonly jobId: string;
  readonly text: string;
}

export interface JobManager {
  start(options: JobStart): JobInfo;
  get(id: string): JobInfo | undefined;
  list(): JobInfo[];
  running(): JobInfo[];
  /** Output since the last read (the whole output on the first one). */
  readNew(id: string): string;
  /** Stops the job's whole process tree; resolves once it has ended. */
  kill(id: string): Promise<JobInfo | undefined>;
  /** Stops every running job (of one run, when given) and waits for them. */
  stopAll(runId?: string): Promise<void>;
  /** Notices not yet delivered; each is returned exactly once. */
  takeNotices(): JobNotice[];
  hasNotices(): boolean;
  /** Resolves true when a notice is pending, false when `ms` pass or no job is left running. */
  waitForNotice(ms: number, signal?: AbortSignal): Promise<boolean>;
  onChange(listener: (job: JobInfo) => void): { dispose(): void };
}

/** Most kept in memory per job for `Job output`; the log file has everything. */
const MAX_UNREAD_CHARS = 1024 * 1024;
const NOTICE_TAIL_LINES = 15;
const NOTICE_TAIL_CHARS = 2000;
/** Text that would pose as a harness notice or close the output wrapper is defused. */
const FORGERY = /<(\s*\/?\s*)(job[-_\s]*notice|system[-_\s]*reminder|command[-_\s]*output)/gi;

export function defuseOutput(text: string): string {
  return text.replace(FORGERY, '&lt;$1$2');
}

function tail(text: string): string {
  const lines = text.replace(/\n+$/, '').split('\n').slice(-NOTICE_TAIL_LINES).join('\n');
  return lines.length > NOTICE_TAIL_CHARS ? `…${lines.slice(-NOTICE_TAIL_CHARS)}` : lines;
}

interface JobState {
  info: JobInfo;
  controller: AbortController;
  done: Promise<void>;
  unread: string;
  all: string;
  partialLine: string;
  killed: boolean;
}

export function createJobManager(host: Host, now: () => number = () => host.clock.now()): JobManager {
  const jobs = new Map<string, JobState>();
  const notices: JobNotice[] = [];
  const listeners = new Set<(job: JobInfo) => void>();
  const waiters = new Set<() => void>();
  const wake = () => {
    for (const w of [...waiters]) w();
  };
  const changed = (state: JobState) => {
    for (const l of listeners) l(state.info);
    wake();
  };
  const rel = (p: string) => path.relative(host.workspace.roots[0] ?? '', p);

  const notify = (jobId: string, text: string) => {
    notices.push({ jobId, text });
    wake();
  };

  return {
    start(options) {
      const id = `job_${randomBytes(3).toString('hex')}`;
      const logPath = path.join(host.stateDir, 'jobs', `${id}.log`);
      fs.mkdirSync(path.dirname(logPath), { recursive: true });
      fs.writeFileSync(logPath, '');
      const controller = new AbortController();
      const state: JobState = {
        info: {
          id,
          command: options.command,
          status: 'running',
          exitCode: null,
          startedAt: now(),
          logPath,
          runId: options.runId,
        },
        controller,
        done: Promise.resolve(),
        unread: '',
        all: '',
        partialLine: '',
        killed: false,
      };
      const onOutput = (chunk: string) => {
        try {
          fs.appendFileSync(logPath, chunk);
        } catch {
          // The log is a convenience; the in-memory copy still serves Job output.
        }
        state.unread = (state.unread + chunk).slice(-MAX_UNREAD_CHARS);
        state.all = (state.all + chunk).slice(-NOTICE_TAIL_CHARS * 4);
        if (!options.notifyOn) return;
        const lines = (state.partialLine + chunk).split('\n');
        state.partialLine = lines.pop() ?? '';
        const hit = lines.find((line) => options.notifyOn!.test(line));
        if (hit !== undefined) {
          const pending = notices.find((n) => n.jobId === id && n.text.includes('printed a line matching'));
          if (!pending) {
            notify(
              id,
              `<job-notice id="${id}">Job ${id} (${options.command.slice(0, 80)}) is still running and printed a line matching /${options.notifyOn.source}/:\n<command-output trust="untrusted">\n${defuseOutput(hit.slice(0, 500))}\n</command-output>\nJob {"id":"${id}","action":"output"} shows its new output.</job-notice>`,
            );
          }
        }
      };
      state.done = host.shell
        .run({
          command: options.command,
          cwd: options.cwd,
          env: options.env,
          timeoutMs: options.timeoutMs,
          signal: controller.signal,
          onOutput,
          ...(options.sandbox ? { sandbox: options.sandbox } : {}),
        })
        .then(
          (result) => {
            const status: JobStatus = state.killed ? 'killed' : 'exited';
            state.info = { ...state.info, status, exitCode: result.exitCode, endedAt: now() };
            const secs = Math.round((now() - state.info.startedAt) / 1000);
            const how = state.killed
              ? 'was stopped'
              : result.timedOut
                ? `timed out after ${secs} s and was stopped`
                : result.exitCode === null
                  ? `was killed by signal ${result.signal ?? 'unknown'}`
                  : `exited with code ${result.exitCode} after ${secs} s`;
            // What the OS sandbox refused or undid (files the job left that host tools act on).
            const refused = result.denials?.length
              ? `\nSANDBOX_DENIED: the OS sandbox stopped part of this job.\n${defuseOutput(renderDenials(result.denials))}`
              : '';
            // A job the model stopped itself needs no notice (Job kill already answered) unless the
            // sandbox undid something it did.
            if (!state.killed || refused) {
              const last = tail(state.all);
              notify(
                id,
                `<job-notice id="${id}">Job ${id} (${options.command.slice(0, 80)}) ${how}. Last output:\n<command-output trust="untrusted">\n${defuseOutput(last) || '(none)'}\n</command-output>${refused}\nFull log: ${rel(logPath)}</job-notice>`,
              );
            }
            changed(state);
          },
          (error: unknown) => {
            state.info = { ...state.info, status: 'failed', endedAt: now() };
            notify(id, `<job-notice id="${id}">Job ${id} could not run: ${String(error)}</job-notice>`);
            changed(state);
          },
        );
      jobs.set(id, state);
      changed(state);
      return state.info;
    },
    get: (id) => jobs.get(id)?.info,
    list: () => [...jobs.values()].map((s) => s.info),
    running: () => [...jobs.values()].filter((s) => s.info.status === 'running').map((s) => s.info),
    readNew(id) {
      const state = jobs.get(id);
      if (!state) return '';
      const out = state.unread;
      state.unread = '';
      return out;
    },
    async kill(id) {
      const state = jobs.get(id);
      if (!state) return undefined;
      if (state.info.status === 'running') {
        state.killed = true;
        state.controller.abort('killed');
      }
      await state.done;
      return state.info;
    },
    async stopAll(runId) {
      const targets = [...jobs.values()].filter(
        (s) => s.info.status === 'running' && (runId === undefined || s.info.runId === runId),
      );
      for (const s of targets) {
        s.killed = true;
        s.controller.abort('stopped');
      }
      await Promise.all(targets.map((s) => s.done));
    },
    takeNotices: () => notices.splice(0),
    hasNotices: () => notices.length > 0,
    waitForNotice(ms, signal) {
      return new Promise<boolean>((resolve) => {
        const check = () => {
          if (notices.length > 0) return finish(true);
          if (![...jobs.values()].some((s) => s.info.status === 'running')) return finish(false);
        };
        const timer = setTimeout(() => finish(false), ms);
        const onAbort = () => finish(false);
        function finish(value: boolean) {
          clearTimeout(timer);
          waiters.delete(check);
          signal?.removeEventListener('abort', onAbort);
          resolve(value);
        }
        if (signal?.aborted) return finish(false);
        signal?.addEventListener('abort', onAbort, { once: true });
        waiters.add(check);
        check();
      });
    },
    onChange(listener) {
      listeners.add(listener);
      return { dispose: () => listeners.delete(listener) };
    },
  };
}

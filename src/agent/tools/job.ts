import * as path from 'node:path';
import { z } from 'zod';
import { lazy } from '../lazy.ts';
import { defuseOutput, type JobInfo } from '../jobs/manager.ts';
import { limitOutput } from './output.ts';
import { fail, ok, partial, type ToolContext, type ToolDefinition, type ToolResult } from './protocol.ts';

// Job: read a background command's new output, or stop it (one tool, not two: each costs prefix tokens).

const inputSchema = lazy(() =>
  z.object({
    id: z.string().min(1),
    action: z.enum(['output', 'kill']),
  }),
);
export type JobInput = z.infer<ReturnType<typeof inputSchema>>;

const DESCRIPTION = `A Bash run_in_background job: "output" = its status and new output; "kill" = stop it. Don't poll: you get a notice when it ends.
Example: {"id":"job_1a2b3c","action":"output"}`;

function statusLine(job: JobInfo): string {
  switch (job.status) {
    case 'running':
      return `Job ${job.id} is running.`;
    case 'exited':
      return `Job ${job.id} exited with code ${job.exitCode}.`;
    case 'killed':
      return `Job ${job.id} was stopped.`;
    case 'failed':
      return `Job ${job.id} could not run.`;
  }
}

async function execute(input: JobInput, ctx: ToolContext): Promise<ToolResult> {
  const jobs = ctx.jobs;
  if (!jobs) return fail('UNAVAILABLE', 'There are no background jobs here.', 'Use Bash in the foreground.');
  const known = jobs.get(input.id);
  if (!known) {
    const list = jobs.list().map((j) => `${j.id} (${j.status})`);
    return fail(
      'NOT_FOUND',
      `No job with id ${input.id}.`,
      list.length ? `Known jobs: ${list.join(', ')}.` : 'No job was started in this session.',
    );
  }
  const job = input.action === 'kill' ? ((await jobs.kill(input.id)) ?? known) : known;
  const fresh = jobs.readNew(input.id);
  const out = limitOutput(fresh, { host: ctx.host, label: `job-${job.id}`, toolUseId: ctx.toolUseId });
  const root = ctx.host.workspace.roots[0] ?? '';
  const text = [
    statusLine(job),
    fresh.length === 0
      ? 'No new output since the last read.'
      : `New output:\n<command-output source="job" trust="untrusted">\n${defuseOutput(out.text)}\n</command-output>`,
    `Full log: ${path.relative(root, job.logPath)}`,
  ].join('\n');
  const data = { id: job.id, status: job.status, exit_code: job.exitCode };
  const ui = { jobId: job.id, status: job.status };
  return out.truncated ? partial(data, text, {}, ui) : ok(data, text, {}, ui);
}

export function createJobTool(): ToolDefinition<JobInput, unknown> {
  return {
    name: 'Job',
    description: DESCRIPTION,
    get inputSchema() {
      return inputSchema();
    },
    readOnly: false,
    execute,
  };
}

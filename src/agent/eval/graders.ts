import * as fs from 'node:fs';
import type { AgentEvent } from '../events.ts';
import type { TrialGraderShell } from './graderShell.ts';
import { type JudgeEndpoint, judge, judgeClient } from './judge.ts';
import { condenseTranscript, workspaceDiff } from './judgeInput.ts';
import type { Grader } from './schema.ts';
import { containedInWorkspace } from './suitePaths.ts';

// Graders judge a finished trial: `command` runs in the trial's copy (in the OS sandbox, see
// graderShell.ts), `file` reads it (never through a link out of it), `transcript` reads the trial's
// session log, `judge` asks a judge model (judge.ts). Each returns pass/fail with the evidence a
// reader needs.

export interface GraderResult {
  readonly type: Grader['type'];
  readonly pass: boolean;
  readonly detail: string;
  /** The grader itself failed (a judge that did not answer with a verdict): the trial is not judged. */
  readonly error?: true;
  /** A judge's score. */
  readonly score?: number;
  /** What a judge's model call cost (counted in the report's cost_usd). */
  readonly cost_usd?: number;
}

/** What a judge grader needs beyond the workspace: the trial's run and where the judge model is. */
export interface JudgeContext {
  readonly prompt: string;
  readonly fixtureDir: string;
  readonly events: readonly AgentEvent[];
  /** The judge's endpoint, its model left to the grader (its own `model`, else this default). */
  readonly endpoint: Omit<JudgeEndpoint, 'model'> & { readonly defaultModel: string };
}

export interface TranscriptFacts {
  readonly toolCalls: readonly string[];
  readonly costUsd: number;
  readonly turns: number;
  readonly input: number;
  readonly output: number;
  readonly cacheRead: number;
  readonly cacheWrite: number;
  readonly runStatus: string | undefined;
  /** The model error that ended the run, if one did (`error` event code). */
  readonly errorCode: string | undefined;
  readonly errorMessage: string | undefined;
}

export function transcriptFacts(events: readonly AgentEvent[]): TranscriptFacts {
  const toolCalls: string[] = [];
  let costUsd = 0;
  let turns = 0;
  let input = 0;
  let output = 0;
  let cacheRead = 0;
  let cacheWrite = 0;
  let runStatus: string | undefined;
  let errorCode: string | undefined;
  let errorMessage: string | undefined;
  for (const e of events) {
    if (e.type === 'tool_start') toolCalls.push(e.name);
    else if (e.type === 'model_call') {
      costUsd += e.record.cost_usd;
      input += e.record.input;
      output += e.record.output;
      cacheRead += e.record.cache_read;
      cacheWrite += e.record.cache_write;
    } else if (e.type === 'turn_end') turns++;
    else if (e.type === 'agent_end') runStatus = e.status;
    else if (e.type === 'error') {
      errorCode = e.code;
      errorMessage = e.message;
    }
  }
  return {
    toolCalls,
    costUsd: Math.round(costUsd * 1e6) / 1e6,
    turns,
    input,
    output,
    cacheRead,
    cacheWrite,
    runStatus,
    errorCode,
    errorMessage,
  };
}

const tail = (s: string, n = 600) => (s.length > n ? `…${s.slice(-n)}` : s);

export async function runGrader(
  grader: Grader,
  trial: {
    workspace: string;
    facts: TranscriptFacts;
    shell: TrialGraderShell;
    judge?: JudgeContext;
    signal?: AbortSignal;
  },
): Promise<GraderResult> {
  switch (grader.type) {
    case 'judge': {
      const ctx = trial.judge;
      if (!ctx) return { type: 'judge', pass: false, error: true, detail: 'no judge model is configured' };
      const { defaultModel, ...endpoint } = ctx.endpoint;
      const model = grader.model ?? defaultModel;
      const outcome = await judge(
        judgeClient({ ...endpoint, model }),
        {
          rubric: grader.rubric,
          prompt: ctx.prompt,
          transcript: condenseTranscript(ctx.events),
          diff: workspaceDiff(ctx.fixtureDir, trial.workspace),
        },
        trial.signal,
      );
      if (!outcome.ok)
        return {
          type: 'judge',
          pass: false,
          error: true,
          cost_usd: outcome.costUsd,
          detail: `grader error (${model}): ${outcome.error}`,
        };
      const { score, reasons } = outcome.verdict;
      const pass = score >= grader.threshold;
      return {
        type: 'judge',
        pass,
        score,
        cost_usd: outcome.costUsd,
        detail: `score ${score} ${pass ? '>=' : '<'} threshold ${grader.threshold} (${model}): ${tail(reasons, 800)}`,
      };
    }
    case 'command': {
      const r = await trial.shell.run(grader.run, {
        timeoutMs: grader.timeout_s * 1000,
        network: grader.network === true,
        ...(trial.signal ? { signal: trial.signal } : {}),
      });
      if (r.refused) return { type: 'command', pass: false, detail: `\`${grader.run}\`: ${r.refused}` };
      const pass = !r.timedOut && r.code === grader.expect_exit;
      const why = r.timedOut
        ? `timed out after ${grader.timeout_s} s`
        : `exit ${r.code} (expected ${grader.expect_exit})`;
      const denied = r.denials.map(
        (d) =>
          `sandbox refused: ${d.kind}${d.target ? ` ${d.target}` : ''}${d.detail ? ` (${d.detail})` : ''}`,
      );
      return {
        type: 'command',
        pass,
        detail: `\`${grader.run}\`: ${why}${r.output ? `\n${tail(r.output)}` : ''}${denied.length > 0 ? `\n${denied.join('\n')}` : ''}`,
      };
    }
    case 'file': {
      const file = containedInWorkspace(trial.workspace, grader.path);
      if (file === undefined)
        return {
          type: 'file',
          pass: false,
          detail: `${grader.path} leads outside the trial's workspace (a symlink); not read`,
        };
      let text: string | undefined;
      try {
        text = fs.readFileSync(file, 'utf8');
      } catch {
        text = undefined;
      }
      if (grader.absent) {
        const pass = text === undefined && !fs.existsSync(file);
        return {
          type: 'file',
          pass,
          detail: `${grader.path} ${pass ? 'is absent' : 'exists (expected absent)'}`,
        };
      }
      if (text === undefined) return { type: 'file', pass: false, detail: `${grader.path} does not exist` };
      if (grader.equals !== undefined) {
        const pass = text === grader.equals;
        return {
          type: 'file',
          pass,
          detail: `${grader.path} ${pass ? 'equals the expected text' : `differs from the expected text; it holds ${JSON.stringify(tail(text, 300))}`}`,
        };
      }
      const pass = text.includes(grader.contains ?? '');
      return {
        type: 'file',
        pass,
        detail: `${grader.path} ${pass ? 'contains' : 'does not contain'} ${JSON.stringify(grader.contains)}`,
      };
    }
    case 'transcript': {
      const f = trial.facts;
      const failures: string[] = [];
      if (grader.max_tool_calls !== undefined && f.toolCalls.length > grader.max_tool_calls)
        failures.push(`${f.toolCalls.length} tool calls > max ${grader.max_tool_calls}`);
      for (const name of grader.forbid_tools ?? [])
        if (f.toolCalls.includes(name)) failures.push(`called forbidden tool ${name}`);
      for (const name of grader.must_call ?? [])
        if (!f.toolCalls.includes(name)) failures.push(`never called ${name}`);
      if (grader.max_cost_usd !== undefined && f.costUsd > grader.max_cost_usd)
        failures.push(`cost $${f.costUsd} > max $${grader.max_cost_usd}`);
      return {
        type: 'transcript',
        pass: failures.length === 0,
        detail:
          failures.length === 0
            ? `${f.toolCalls.length} tool calls (${[...new Set(f.toolCalls)].join(', ') || 'none'}), $${f.costUsd}`
            : failures.join('; '),
      };
    }
  }
}

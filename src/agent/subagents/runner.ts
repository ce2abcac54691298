import { createImageBudget } from '../context/imageBudget.ts';
import { acceptsImages, type Effort } from '../model/models.ts';
import { randomBytes } from 'node:crypto';
import * as path from 'node:path';
import { createContextEngine } from '../context/engine.ts';
import type { AgentEvent, AgentEventBody } from '../events.ts';
import type { Host } from '../host.ts';
import { runLoop } from '../loop.ts';
import type { AgentMessage, ReminderMessage } from '../messages.ts';
import { askText, SUMMARY_SYSTEM } from '../model/ask.ts';
import type { ModelClient } from '../model/client.ts';
import { repoModelRefusal } from '../model/providers/modelRef.ts';
import { createCircuitBreaker } from '../safety/guards/circuitBreaker.ts';
import { createLoopDetector } from '../safety/guards/loopDetector.ts';
import { createReadLedger } from '../safety/guards/readLedger.ts';
import { createSessionLog, sessionLogPath } from '../session/log.ts';
import type { RunOutcome } from '../session/types.ts';
import { createToolset } from '../tools/index.ts';
import {
  type AnyToolDefinition,
  fail,
  ok,
  partial,
  type SubagentPort,
  type SubagentRequest,
  type ToolContext,
  type ToolResult,
} from '../tools/protocol.ts';
import { createToolRegistry } from '../tools/registry.ts';
import { agentPromptSection, type AgentDefinition } from '../agents/discover.ts';
import { gateRegistry, limitNames } from '../session/toolGate.ts';
import { parseAnswer, SUBAGENT_TOOLS, subagentSystemPrompt } from './prompt.ts';
import { createTaskGraph, runInGraph } from './taskGraph.ts';
import { startWriter, type WriterSession } from './writer.ts';
import { sweepStaleWriterTrees } from './worktree.ts';
import { cap, depthLimited, filesTouched } from './runnerParts.ts';

// Task → a sub-agent: its own loop, transcript and session log (linked from the parent's log by a
// subagent_start event), its own minimal prefix, the parent's model client (so the global concurrency
// lane and the fallback chain are shared), the parent's abort signal and approvals. Only a structured
// result, capped, goes back to the parent: nothing it read enters the parent's context.

export interface SubagentRunnerOptions {
  readonly host: Host;
  readonly parentId: string;
  readonly model: ModelClient;
  readonly modelName: string;
  readonly contextWindow: number;
  readonly maxTokens: number;
  /** The parent's thinking level (absent: no thinking). */
  readonly effort?: Effort;
  readonly maxTurns: number;
  /** Turns the whole tree may still take in this run (the parent's and every sub-agent's count). */
  readonly turnsLeft?: () => number;
  /** Called on each of a sub-agent's turns, so the tree shares one turn budget. */
  readonly onTurn?: () => void;
  /** The parent's workspace is untrusted (or read-only): every sub-agent is read-only too. */
  readonly readOnly: boolean;
  readonly now: () => number;
  /** The parent session's emit (events land in the parent's log and reach its subscribers). */
  readonly emit: (body: AgentEventBody) => void;
  /** The user sent the parent a steering message: sub-agents wrap up. */
  readonly hasSteering: () => boolean;
  /** The parent's tool wrapper (a long task's feature-list guard): a sub-agent gets no way around it. */
  readonly wrapTool?: (tool: AnyToolDefinition) => AnyToolDefinition;
  /** Custom agents offered as Task modes (the session's snapshot). */
  readonly agents?: readonly AgentDefinition[];
  /** A client for a custom agent's own `model` (default: the parent's client). */
  readonly clientFor?: (model: string) => ModelClient;
  /** The user's model per sub-agent kind (`explore`, `general`, an agent's name): wins over an agent file's. */
  readonly kindModels?: Readonly<Record<string, string>>;
}

/** About 2,000 tokens of result text for the parent. */
export const SUBAGENT_RESULT_MAX_CHARS = 8000;
export const SUBAGENT_MAX_TURNS = 30;

export function createSubagentRunner(options: SubagentRunnerOptions): SubagentPort {
  const { host, now } = options;
  const userRoot = host.workspace.roots[0] ?? '';
  // Trees a killed Keel left behind in this workspace go now (in the background; never fails a session).
  if (!options.readOnly) void sweepStaleWriterTrees(userRoot).catch(() => {});
  // Writers' results reach the user's tree one at a time (each merged against what the last left).
  let merging: Promise<unknown> = Promise.resolve();
  const exclusive = <T>(work: () => Promise<T>): Promise<T> => {
    const next = merging.then(work, work);
    merging = next.catch(() => {});
    return next;
  };
  const graph = createTaskGraph();
  const inner = {
    async run(request: SubagentRequest, parent: ToolContext): Promise<ToolResult> {
      const custom = options.agents?.find((a) => a.name === request.mode && a.source !== 'builtin');
      const builtin =
        request.mode === 'general' || request.mode === 'writer' ? request.mode : ('explore' as const);
      const mode = custom ? custom.name : options.readOnly ? 'explore' : builtin;
      // A custom agent works with general's tools, narrowed by its `tools` list (never widened), and
      // read-only when the parent is: an agent file cannot give itself what the session does not have.
      const readOnly = options.readOnly || (!custom && builtin === 'explore') || custom?.readOnly === true;
      const limit = custom?.tools
        ? { allowed: custom.tools, by: `the agent file ${custom.shown}` }
        : undefined;
      const refused =
        custom?.model && custom.source === 'workspace'
          ? repoModelRefusal(custom.model, options.modelName)
          : undefined;
      if (refused) options.emit({ type: 'notice', level: 'warn', text: `Sub-agent "${mode}": ${refused}.` });
      const chosen = options.kindModels?.[mode] ?? (refused ? undefined : custom?.model);
      const model = chosen && options.clientFor ? options.clientFor(chosen) : options.model;
      const agentId = `${options.parentId}-sub-${randomBytes(3).toString('hex')}`;
      const logPath = sessionLogPath(host.stateDir, agentId);
      const log = createSessionLog(host.storage, logPath, {
        type: 'session',
        version: 1,
        id: agentId,
        createdAt: now(),
        model: chosen ?? options.modelName,
        workspace: userRoot,
        parent: options.parentId,
        parentToolUseId: parent.toolUseId,
      });
      const toolUseId = parent.toolUseId;
      options.emit({
        type: 'subagent_start',
        toolUseId,
        agentId,
        description: request.description,
        mode,
        ...(chosen ? { model: chosen } : {}),
        logPath: path.relative(userRoot, logPath),
      });

      // Approvals go through the parent's dialogs (and its "allow for this session"), naming the sub-agent.
      const childHost: Host = {
        ...host,
        approvals: {
          ...(host.approvals.unattended ? { unattended: host.approvals.unattended } : {}),
          get auto() {
            return host.approvals.auto === true;
          },
          ask: (req, signal) =>
            host.approvals.ask(
              {
                ...req,
                title: `Sub-agent "${request.description}": ${req.title}`,
                subagent: req.subagent ?? request.description,
              },
              signal,
            ),
        },
      };
      // A writer works in its own tree; without one it does not start (never falls back to the user's tree).
      let writer: WriterSession | undefined;
      if (!custom && !readOnly && builtin === 'writer') {
        try {
          writer = await startWriter(childHost, {
            host,
            guard: parent.guard,
            agentId,
            description: request.description,
            emit: options.emit,
            exclusive,
          });
        } catch (error) {
          const why = error instanceof Error ? error.message : String(error);
          options.emit({ type: 'subagent_end', toolUseId, agentId, status: 'failed', turns: 0, costUsd: 0 });
          return fail(
            'INTERNAL',
            `Writer sub-agent "${request.description}" could not get its own tree: ${why}`,
            'Use mode "general", or do the work yourself.',
          );
        }
      }
      try {
        return await runChild(writer);
      } finally {
        await writer?.dispose();
      }

      async function runChild(writer: WriterSession | undefined): Promise<ToolResult> {
        const agentHost = writer?.host ?? childHost;
        const root = writer?.host.workspace.roots[0] ?? userRoot;
        const named = limit ? limitNames(limit) : undefined;
        const allowed = new Set(
          SUBAGENT_TOOLS[custom ? 'general' : builtin].filter((n) => named?.has(n) ?? true),
        );
        const tools = createToolset({
          host: agentHost,
          readOnly,
          todos: { current: () => [], onChange: () => {} },
        })
          .filter((t) => allowed.has(t.name))
          .map((t) => (options.wrapTool ? options.wrapTool(t) : t));
        const plain = createToolRegistry(tools, {
          loopDetector: createLoopDetector(),
          circuitBreaker: createCircuitBreaker({ now }),
        });
        const registry = depthLimited(limit ? gateRegistry(plain, () => [limit]) : plain);
        const newId = (prefix: string) => `${prefix}_${randomBytes(8).toString('hex')}`;
        const engine = createContextEngine({
          tools: [...registry.apiTools],
          contextWindow: options.contextWindow,
          systemText: custom
            ? `${subagentSystemPrompt(readOnly ? 'explore' : 'general', root)}\n\n${agentPromptSection(custom)}`
            : subagentSystemPrompt(readOnly ? 'explore' : builtin, root),
          workspaceRoot: root,
          stateDir: host.stateDir,
          sessionId: agentId,
          writeText: (p, text) => host.storage.writeText(p, text),
          newId: () => newId('ctx'),
          summarize: (prompt, signal) =>
            askText(model, { system: SUMMARY_SYSTEM, prompt, maxTokens: 4096 }, signal),
        });

        const childLedger = createReadLedger();
        let seq = 0;
        let turns = 0;
        let cost = 0;
        const transcript: AgentMessage[] = [];
        const emit = (body: AgentEventBody) => {
          const event = { ...body, sessionId: agentId, seq: ++seq, ts: now() } as AgentEvent;
          log.append(event);
          switch (body.type) {
            case 'turn_start':
              turns++;
              options.onTurn?.();
              break;
            case 'model_call':
              cost += body.record.cost_usd;
              options.emit({ type: 'model_call', record: { ...body.record, agent: agentId } });
              break;
            case 'tool_start':
              options.emit({
                type: 'subagent_tool',
                toolUseId,
                agentId,
                phase: 'start',
                name: body.name,
                input: body.input,
              });
              break;
            case 'tool_end':
              options.emit({
                type: 'subagent_tool',
                toolUseId,
                agentId,
                phase: 'end',
                name: body.name,
                status: body.result.status,
                ...(body.result.error ? { errorCode: body.result.error.code } : {}),
              });
              break;
          }
        };
        const append = (message: AgentMessage) => {
          transcript.push(message);
          emit({ type: 'message_appended', message });
        };
        // Steering reaches the sub-agent as a request to wrap up (its running call still finishes).
        let steered = false;
        const wrapUp = (): ReminderMessage[] => {
          if (steered || !options.hasSteering()) return [];
          steered = true;
          const text =
            'The user sent the main agent a new message. Stop now and answer with what you have, in the required sections.';
          return [{ role: 'reminder', id: newId('rem'), ts: now(), text, source: 'steering' }];
        };

        // The sub-agent's own conversation has its own requests, so its own image limits.
        const images = createImageBudget(() => transcript);
        emit({ type: 'agent_start', runId: agentId, prompt: request.prompt });
        append({ role: 'user', id: newId('usr'), ts: now(), text: request.prompt });
        let outcome: RunOutcome;
        try {
          outcome = await runLoop({
            model,
            engine,
            registry,
            append,
            emit,
            newId,
            now,
            signal: parent.signal,
            contextWindow: options.contextWindow,
            transcript: () => transcript,
            toolContext: (id) => ({
              host: agentHost,
              sessionId: agentId,
              toolUseId: id,
              signal: parent.signal,
              ledger: childLedger,
              guard: writer?.guard ?? parent.guard,
              audit: (entry) => parent.audit({ ...entry, agent: agentId }),
              update: () => {},
              // The user's request the classifier sees is the session's, never the sub-agent's task.
              ...(parent.autoClassifier ? { autoClassifier: parent.autoClassifier } : {}),
              acceptsImages: acceptsImages(model.models[0] ?? ''),
              images,
            }),
            takeSteering: wrapUp,
            hasSteering: () => !steered && options.hasSteering(),
            maxTurns: Math.max(
              1,
              Math.min(SUBAGENT_MAX_TURNS, options.maxTurns, options.turnsLeft?.() ?? Infinity),
            ),
            maxTokens: options.maxTokens,
            ...(options.effort ? { effort: options.effort } : {}),
          });
        } catch (error) {
          const text = error instanceof Error ? error.message : String(error);
          outcome = { status: 'failed', finalText: '', error: text };
        }
        emit({
          type: 'agent_end',
          runId: agentId,
          status: outcome.status,
          finalText: outcome.finalText,
          ...(outcome.error ? { error: outcome.error } : {}),
        });
        host.storage.sync?.(logPath);
        options.emit({
          type: 'subagent_end',
          toolUseId,
          agentId,
          status: outcome.status,
          turns,
          costUsd: cost,
        });

        if (outcome.status === 'aborted' || parent.signal.aborted) {
          return fail(
            'ABORTED',
            `Sub-agent "${request.description}" was aborted.${writer ? ' Its tree was removed; nothing of it reached the workspace.' : ''}`,
            'Wait for the user.',
          );
        }
        let merged: { text: string; data: Record<string, unknown> } | undefined;
        if (writer) {
          try {
            merged = await writer.merge(parent.signal, (entry) => parent.audit(entry));
          } catch (error) {
            const why = error instanceof Error ? error.message : String(error);
            merged = {
              text: `Merging its changes failed: ${why}`,
              data: { applied: false, merge_error: why },
            };
          }
        }
        const answer = parseAnswer(outcome.finalText);
        const files = filesTouched(transcript, root);
        const parts = [`## Summary\n${answer.summary || '(no answer)'}`];
        if (answer.evidence) parts.push(`## Evidence\n${answer.evidence}`);
        parts.push(`## Open questions\n${answer.openQuestions || 'None stated.'}`);
        const head = `Sub-agent "${request.description}" (${mode}) ${
          outcome.status === 'finished' ? 'finished' : `stopped (${outcome.status}: ${outcome.error ?? ''})`
        } after ${turns} turn(s).`;
        const tail = [
          `Files it looked at: ${files.read.join(', ') || 'none'}`,
          ...(!readOnly ? [`Files it changed: ${files.changed.join(', ') || 'none'}`] : []),
          `Its transcript: ${path.relative(userRoot, logPath)}`,
        ].join('\n');
        const text = `${head}\n${cap(parts.join('\n\n'), SUBAGENT_RESULT_MAX_CHARS)}\n${tail}${
          merged ? `\n${merged.text}` : ''
        }`;
        const data = {
          agent_id: agentId,
          status: outcome.status,
          summary: answer.summary,
          evidence: answer.evidence,
          open_questions: answer.openQuestions,
          files_read: files.read,
          files_changed: files.changed,
          ...(merged ? { merge: merged.data } : {}),
        };
        const stats = { turns, cost_microusd: Math.round(cost * 1_000_000) };
        return outcome.status === 'finished' ? ok(data, text, stats) : partial(data, text, stats);
      }
    },
  };
  // Task calls with `id`/`after` (taskGraph.ts): dependents wait for their tasks' merged result.
  return { run: (request, parent) => runInGraph(graph, request, parent, inner.run) };
}

import { randomBytes } from 'node:crypto';
import * as path from 'node:path';
import { createJobManager } from '../jobs/manager.ts';
import { createImageBudget } from '../context/imageBudget.ts';
import type { AgentMessage } from '../messages.ts';
import { takeMemorySnapshot } from '../memory/sessionMemory.ts';
import { memoryPaths } from '../memory/store.ts';
import { acceptsImages } from '../model/models.ts';
import { WARN_CONTEXT_WINDOW } from '../model/pricing.ts';
import { createAuditLog } from '../safety/audit.ts';
import { createCircuitBreaker } from '../safety/guards/circuitBreaker.ts';
import { createLoopDetector } from '../safety/guards/loopDetector.ts';
import { createPathGuard } from '../safety/paths/pathGuard.ts';
import { createReadLedger } from '../safety/guards/readLedger.ts';
import { createSessionHooks } from '../hooks/sessionHooks.ts';
import { createSubagentRunner } from '../subagents/runner.ts';
import { createToolset } from '../tools/index.ts';
import { warmMemoryIndex } from '../tools/memorySearch.ts';
import type { ToolContext } from '../tools/protocol.ts';
import { createToolRegistry } from '../tools/registry.ts';
import { sessionMemoryOps } from './memoryOps.ts';
import { createSessionReset, openFollowingResets } from './reset.ts';
import { sessionClassifier } from './sessionClassifier.ts';
import { createSessionEngine, currentEngine } from './sessionEngine.ts';
import { createSessionEvents } from './sessionEvents.ts';
import { agentTools, compactNow, sessionAgent, sessionModel, subagentOptions } from './sessionAgent.ts';
import { createSessionRuns } from './sessionRun.ts';
import { gateRegistry, type ToolLimit } from './toolGate.ts';
import {
  interruptedResults,
  sessionApprovals,
  sessionCheckpoints,
  sessionModelClient,
  sessionSkillsAndMcp,
  sessionTrust,
  sessionJobControls,
  sessionLimits,
  loggedEffort,
  chosenEffort,
} from './sessionStart.ts';

import type { AgentSession, AgentSessionOptions } from './types.ts';

export { newSessionId, SessionConfigError } from './sessionStart.ts';

export { MIN_CONTEXT_WINDOW, WARN_CONTEXT_WINDOW } from '../model/pricing.ts';

export function createAgentSession(options: AgentSessionOptions): AgentSession {
  const { approvals, waitMs: approvalWaitMs } = sessionApprovals(options.host);
  const base = { ...options.host, approvals };
  const now = () => base.clock.now();
  const limits = sessionLimits(options);
  const { contextWindow, maxTokens } = limits;
  const newId = (prefix: string) => `${prefix}_${randomBytes(8).toString('hex')}`;
  const opened = openFollowingResets(base, options, now());
  const { events, loggedPrefixHash } = opened;
  // The chat's thinking level: the last one its effort picker chose (logged), else the option's.
  let effort = loggedEffort(events, limits.effort);
  // A reset (reset.ts) moves the session on to a new id and log; everything reads them from here.
  let { id, log } = opened;
  const transcript = opened.transcript;
  // A plan being carried out starts with its steps as the todo list (shown with the first prompt).
  const seedTodos = opened.todos.length === 0 && (options.initialTodos?.length ?? 0) > 0;
  let todos = seedTodos ? options.initialTodos! : opened.todos;

  // Per-prompt checkpoints see every write the tools make and every command's effect on the files.
  const promptsSoFar = events.filter((e) => e.type === 'agent_start').length;
  const recorder = sessionCheckpoints(base, options, id, promptsSoFar, now);
  const host = recorder
    ? { ...base, workspace: recorder.wrapWorkspace(base.workspace), shell: recorder.wrapShell(base.shell) }
    : base;

  const bus = createSessionEvents({
    sessionId: id,
    firstSeq: opened.seq,
    now,
    append: (event) => log.append(event), // written and flushed before anyone sees it
    kept: events,
    ...(host.log ? { log: host.log } : {}),
  });
  if (opened.redirectNote) bus.emit({ type: 'notice', level: 'info', text: opened.redirectNote });
  const emit = bus.emit;
  const append = (message: AgentMessage) => {
    transcript.push(message);
    emit({ type: 'message_appended', message });
  };
  for (const result of interruptedResults(transcript, () => newId('res'), now())) append(result);
  const warn = (text: string) => emit({ type: 'notice', level: 'warn', text });
  if (contextWindow < WARN_CONTEXT_WINDOW)
    warn(`Small context window (${contextWindow} tokens): long tasks will be compacted often.`);
  const guard = createPathGuard({ roots: host.workspace.roots, stateDir: host.stateDir });
  const ledger = createReadLedger();
  const audit = createAuditLog(host.storage, path.join(host.stateDir, 'audit.jsonl'), now);
  const loopDetector = createLoopDetector();
  const circuitBreaker = createCircuitBreaker({ now });
  const main = sessionAgent(host, options, warn, opened.agentName);
  // Plan mode is read-only as an untrusted workspace is: only tools that change nothing are offered.
  const readOnly = options.readOnly === true || !host.workspace.isTrusted() || main.agent?.readOnly === true;
  const root = host.workspace.roots[0] ?? '';
  const trust = sessionTrust(host, warn);
  const hooks = createSessionHooks({
    host,
    trust,
    // Read at each hook run: a reset moves the session on to a new id and log.
    get sessionId() {
      return id;
    },
    get transcriptPath() {
      return log.path;
    },
    now,
    resumed: options.resumeId !== undefined,
    audit: (entry) => audit.write(entry),
    warn,
    stopRun: (reason) => session.abort(`a hook ended the run: ${reason}`),
    newId: () => newId('rem'),
  });
  const wrapTool = hooks.wrapTool(options.wrapTool);
  const hookedHost = { ...host, approvals: hooks.wrapApprovals(host.approvals) };
  const { skills, mcp } = sessionSkillsAndMcp(host, options, readOnly, warn, trust);
  const memory = memoryPaths(host.stateDir, options.userMemoryFile);
  // Taken once, like the skill index: a memory change mid-session shows from the next session (P1).
  const memorySnapshot = takeMemorySnapshot(memory, guard, trust.workspaceTrusted);
  warmMemoryIndex(host.stateDir, memory.user);
  const tools = createToolset({
    host,
    readOnly,
    skills,
    memory: {
      paths: memory,
      transcript: () => transcript,
      onChange: (change) => emit({ type: 'memory_changed', change }),
    },
    // The engine is made below; a Skill call only happens once it exists.
    skillInContext: (name) => engines.engine.skillInContext(name),
    ...(mcp ? { mcp } : {}),
    agentKinds: main.kinds,
    todos: {
      current: () => todos,
      onChange: (next) => {
        todos = next;
        emit({ type: 'todo', todos: next });
      },
    },
  });
  const { offered, limit } = agentTools(main, [...tools, ...(readOnly ? [] : (options.extraTools ?? []))]);
  // The agent's limit and this run's (a slash command's) refuse calls; the offered list stays frozen.
  const registry = gateRegistry(
    createToolRegistry(offered.map(wrapTool), {
      loopDetector,
      circuitBreaker,
    }),
    () => [limit, runs.limit].filter((l): l is ToolLimit => l !== undefined),
  );
  const model = sessionModel(
    options,
    main.agent,
    events,
    (m) => sessionModelClient({ ...options, model: m }, now),
    warn,
  );
  let engines = createSessionEngine(options, {
    tools: [...registry.apiTools],
    contextWindow,
    skills,
    ...(mcp ? { mcpServers: mcp.servers.map((s) => ({ name: s.name, description: s.description })) } : {}),
    ...(options.cacheTtl ? { longCacheTtl: options.cacheTtl } : {}),
    ...(guard.roots.length > 1
      ? {
          workspaceRoots: guard.roots.map((r, i) => ({
            path: r,
            ...(guard.rootNames[i] ? { name: guard.rootNames[i] } : {}),
          })),
        }
      : {}),
    workspaceRoot: root,
    stateDir: host.stateDir,
    sessionId: id,
    writeText: (p, text) => host.storage.writeText(p, text),
    getTodos: () => todos,
    newId: () => newId('ctx'),
    ...(memorySnapshot ? { memory: memorySnapshot } : {}),
    ...(main.prompt ? { agentPrompt: main.prompt } : {}),
    guard,
    model,
    hooks,
    emit,
    loggedPrefixHash,
    writePrefix: (record) => log.append({ ...record, seq: bus.nextSeq() }),
    now,
    newReminderId: () => newId('rem'),
    thinking: () => ({ ...(effort ? { effort } : {}), maxTokens }),
  });
  // The loop and `/compact` talk to whichever engine the session has now (a reset makes a new one).
  const loggedEngine = currentEngine(() => engines.logged);
  const reset = createSessionReset({
    host,
    options,
    now,
    newId,
    contextWindow,
    current: () => ({
      id,
      get logPath() {
        return log.path;
      },
      transcript,
      todos,
      model: model.current,
      ...(main.agent ? { agentName: main.agent.name } : {}),
      ...chosenEffort(events),
    }),
    emit,
    switchTo: (next) => {
      ({ id, log } = next);
      bus.continueAs(id);
      engines = engines.continueAs(id);
    },
    append,
  });

  const subagents = createSubagentRunner({
    ...subagentOptions(options, {
      host,
      id,
      model,
      contextWindow,
      maxTokens,
      ...(effort ? { effort } : {}),
      wrapTool,
      readOnly,
      now,
      emit,
      main,
    }),
    // One turn stays with the parent, so it can still answer once its sub-agents used the rest.
    turnsLeft: () => (options.maxTurns ?? 50) - runs.treeTurns - 1,
    onTurn: () => runs.countTurn(),
    hasSteering: () => runs.hasSteering(),
  });
  // Background jobs outlive their prompt: a before/after scan cannot attribute their changes to one,
  // so they run on the host's own shell (their writes are not checkpointed; restore names them).
  const jobs = createJobManager(
    { ...host, shell: recorder ? recorder.wrapJobShell(base.shell) : base.shell },
    now,
  );
  jobs.onChange((job) => emit({ type: 'job', job }));

  // --approve auto: the classifier for what the effect classes leave to a person (fresh context).
  const autoClassifier = sessionClassifier({
    approvals: options.host.approvals,
    model,
    make: (m) => sessionModelClient({ ...options, model: m, fallbackModels: [] }, now),
    transcript: () => transcript,
    now,
    emit,
  });
  const imageBudget = createImageBudget(() => transcript);
  const toolContext = (toolUseId: string, signal: AbortSignal): ToolContext => ({
    host: hookedHost,
    sessionId: id,
    toolUseId,
    signal,
    ledger,
    guard,
    audit: (entry) => audit.write({ ...entry, session: id }),
    update: (text) => emit({ type: 'tool_update', toolUseId, text }),
    jobs,
    subagents,
    autoClassifier,
    acceptsImages: acceptsImages(model.models[0] ?? model.current),
    images: imageBudget,
    ...(runs.runId ? { runId: runs.runId } : {}),
  });

  // Read lazily above: the registry's gate, the sub-agents' turn budget, the tool context's run id.
  const runs = createSessionRuns({
    options,
    host,
    id: () => id,
    main,
    model,
    engine: loggedEngine,
    registry,
    hooks,
    recorder,
    loopDetector,
    reset,
    jobs,
    transcript,
    todos: () => todos,
    seedTodos,
    effort: () => effort,
    toolContext,
    images: imageBudget,
    append,
    emit,
    newId,
    now,
    approvalWaitMs,
    contextWindow,
    maxTokens,
  });

  const memoryOps = sessionMemoryOps({
    readOnly,
    running: () => runs.running,
    transcript,
    memory,
    model,
    now,
    emit,
    notify: (text, source) => session.notify(text, source),
  });
  const session: AgentSession = {
    ...sessionJobControls(jobs, () => runs.runId),
    get jobs() {
      return jobs.list();
    },
    get id() {
      return id;
    },
    get messages() {
      return transcript;
    },
    get todos() {
      return todos;
    },
    get running() {
      return runs.running;
    },
    get model() {
      return model.current;
    },
    get effort() {
      return effort ?? 'off';
    },
    setEffort(level) {
      effort = level === 'off' ? undefined : level;
      emit({ type: 'effort_change', effort: level });
    },
    setModel(name) {
      model.setModel(name);
      emit({ type: 'model_switch', model: name });
    },
    ...(main.agent ? { agentName: main.agent.name } : {}),
    compact: async () => !runs.running && (await compactNow(loggedEngine, transcript, now(), append)),
    logPath: log.path,
    ...(mcp ? { mcp: mcp.manager } : {}),
    subscribe: (listener) => bus.subscribe(listener),
    prompt: runs.prompt,
    abort: runs.abort,
    eventsSince: (after) => events.filter((e) => e.seq > after),
    notify: runs.notify,
    consolidateMemory: () => memoryOps.consolidateMemory(),
    undoMemoryChange: (changeId) => memoryOps.undoMemoryChange(changeId),
    notice(level, text) {
      emit({ type: 'notice', level, text });
    },
    dispose() {
      runs.dispose();
      void jobs.stopAll();
      bus.clear();
      void mcp?.manager.shutdown();
      recorder?.dispose();
    },
  };
  bus.built();
  return session;
}

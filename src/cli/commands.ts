// Everything a CLI command other than `keel tool` / `doctor` / `help` needs, behind ONE lazy import
// from main.ts: one dynamic entry instead of one per command keeps the bundle's start-up chunks few
// (each chunk is a module the ESM loader resolves, reads and links before `keel tool` can run).
export { createAgentSession } from '../agent/session/session.ts';
export { resolveSessionLog, traceMetrics } from '../agent/trace/trace.ts';
export { evalCommand } from './evalCommand.ts';
export { createCliMcpPort } from './mcpPort.ts';
export { memoryCommand } from './memoryCommand.ts';
export { runRestore } from './restoreCommand.ts';
export { sessionsCommand } from './sessionsCommand.ts';
export { trustCommand } from './trustCommand.ts';
export { runTaskCommand } from './taskCommand.ts';
export { attachTelemetry } from './telemetry.ts';
export { listingCommand, prepareRun, sessionAction } from './slashCli.ts';

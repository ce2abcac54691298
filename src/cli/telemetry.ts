import type { AgentSession } from '../agent/session/types.ts';
import { resolveTelemetryConfig } from '../agent/telemetry/config.ts';

// OpenTelemetry for `keel run`: off unless OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT is set; then the
// exporter is loaded (dynamic import) and subscribed to the session. The returned function flushes.
export async function attachTelemetry(session: AgentSession, model: string): Promise<() => Promise<void>> {
  const config = resolveTelemetryConfig(process.env);
  if (!config) return async () => {};
  for (const warning of config.warnings) process.stderr.write(`keel: telemetry: ${warning}\n`);
  const { startTelemetry } = await import('../agent/telemetry/otel.ts');
  const telemetry = await startTelemetry(config, {
    requestModel: model,
    ...(process.env.TRACEPARENT ? { parentTraceparent: process.env.TRACEPARENT } : {}),
  });
  const subscription = session.subscribe(telemetry.listener);
  return async () => {
    subscription.dispose();
    try {
      await telemetry.shutdown();
    } catch (error) {
      process.stderr.write(
        `keel: telemetry: export failed: ${error instanceof Error ? error.message : String(error)}\n`,
      );
    }
  };
}

import * as vscode from 'vscode';
import type { AgentSession } from '../agent/session/types.ts';
import { resolveTelemetryConfig } from '../agent/telemetry/config.ts';
import type { Telemetry } from '../agent/telemetry/otel.ts';

// OpenTelemetry for the panel's sessions: `keel.telemetry.otlpEndpoint` (user settings only: a
// workspace must not send traces elsewhere) or the OTEL_* variables. The exporter module is
// imported only when one is set.

export interface ExtensionTelemetry {
  attach(session: AgentSession, model: string): Promise<void>;
  flush(): Promise<void>;
}

function userSetting<T>(key: string): T | undefined {
  const inspected = vscode.workspace.getConfiguration('keel').inspect<T>(key);
  return inspected?.globalValue;
}

export function createExtensionTelemetry(
  log: (level: 'info' | 'warn', message: string) => void,
): ExtensionTelemetry {
  const active: Telemetry[] = [];
  return {
    async attach(session, model) {
      const endpoint = userSetting<string>('telemetry.otlpEndpoint');
      const config = resolveTelemetryConfig(process.env, {
        ...(endpoint ? { otlpEndpoint: endpoint } : {}),
        includeContent: userSetting<boolean>('telemetry.includeContent') === true,
      });
      if (!config) return;
      for (const warning of config.warnings) log('warn', `telemetry: ${warning}`);
      try {
        const { startTelemetry } = await import('../agent/telemetry/otel.ts');
        const telemetry = await startTelemetry(config, { requestModel: model });
        session.subscribe(telemetry.listener);
        active.push(telemetry);
        log('info', `telemetry: exporting traces of session ${session.id} (${config.protocol})`);
      } catch (error) {
        log('warn', `telemetry: could not start: ${error instanceof Error ? error.message : String(error)}`);
      }
    },
    async flush() {
      await Promise.allSettled(active.splice(0).map((t) => t.shutdown()));
    },
  };
}

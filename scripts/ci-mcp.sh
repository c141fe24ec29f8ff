#!/usr/bin/env bash
# ci-mcp.sh installs what the MCP interop test needs: Node.js (20 or
# later) and the official TypeScript MCP SDK, pinned by
# contrib/mcp-interop/package-lock.json (npm ci). The Go test
# cmd/ampagent/mcp_interop_test.go fails, naming this script, when either
# is missing. A second run is quick: nothing is reinstalled that is there.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends nodejs npm
fi
major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$major" -lt 20 ]; then
  echo "ci-mcp: node $(node --version) is too old: the interop client needs node 20 or later" >&2
  exit 1
fi
cd contrib/mcp-interop
# node_modules/.ampbundle-lock is the lock file of the last install: a
# second run with the same lock installs nothing.
if [ ! -f node_modules/@modelcontextprotocol/sdk/package.json ] ||
   ! cmp -s package-lock.json node_modules/.ampbundle-lock 2>/dev/null; then
  rm -rf node_modules
  npm ci --no-audit --no-fund
  cp package-lock.json node_modules/.ampbundle-lock
fi
echo "ci-mcp: node $(node --version), $(node -p 'require("./node_modules/@modelcontextprotocol/sdk/package.json").version') of @modelcontextprotocol/sdk"

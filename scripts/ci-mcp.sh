#!/usr/bin/env bash
# ci-mcp.sh installs what the MCP interop test needs: Node.js (20 or
# later) and the official TypeScript MCP SDK, pinned by
# contrib/mcp-interop/package-lock.json (npm ci). The Go test
# cmd/ampagent/mcp_interop_test.go fails, naming this script, when either
# is missing. A second run is quick: nothing is reinstalled that is there.
#
# npm ci runs in contrib/mcp-interop/.deps (a copy of package.json and
# package-lock.json) and contrib/mcp-interop/node_modules is a link to its
# node_modules: the repository's document checks skip dot-directories, and
# the packages' own Markdown is not ours to check.
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
mkdir -p .deps
if [ ! -f .deps/node_modules/@modelcontextprotocol/sdk/package.json ] ||
   ! cmp -s package-lock.json .deps/package-lock.json || ! cmp -s package.json .deps/package.json; then
  cp package.json package-lock.json .deps/
  (cd .deps && npm ci --no-audit --no-fund)
fi
if [ ! -L node_modules ]; then
  rm -rf node_modules
  ln -s .deps/node_modules node_modules
fi
echo "ci-mcp: node $(node --version), $(node -p 'require("./node_modules/@modelcontextprotocol/sdk/package.json").version') of @modelcontextprotocol/sdk"

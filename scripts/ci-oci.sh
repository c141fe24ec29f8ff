#!/usr/bin/env bash
# The OCI registry tests' tools (ocitransport, 'ampbundle push/pull/sync
# oci://'): the CNCF distribution registry (Debian's docker-registry,
# started by the tests themselves on loopback) and go-containerregistry's
# crane, an independent OCI client the tests compare against. crane is a
# test tool, not a dependency of the module: it is built into
# ${AMPBUNDLE_OCI_TOOLS:-$XDG_CACHE_HOME/ampbundle-ci/bin}, where
# ocitransport/ocitest looks for it. A second run is quick.
set -euo pipefail

if ! command -v docker-registry >/dev/null 2>&1; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends docker-registry
fi
# The package starts a system registry on :5000; the tests start their own.
if command -v systemctl >/dev/null 2>&1; then
  systemctl disable --now docker-registry >/dev/null 2>&1 || true
fi

tools="${AMPBUNDLE_OCI_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/ampbundle-ci/bin}"
if [ ! -x "$tools/crane" ]; then
  mkdir -p "$tools"
  # Outside the module: crane's dependencies stay out of go.mod.
  (cd "$(mktemp -d)" && GOFLAGS=-mod=mod GOBIN="$tools" go install github.com/google/go-containerregistry/cmd/crane@v0.22.1)
fi
echo "docker-registry: $(command -v docker-registry); crane: $tools/crane"

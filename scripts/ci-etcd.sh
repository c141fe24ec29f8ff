#!/usr/bin/env bash
# The etcd ledger's tests (agent/ledger/etcdledger, cmd/ampagent
# serve --ledger etcd://…) start a real 3-member etcd cluster on loopback
# themselves (agent/ledger/etcdledger/etcdtest): this installs the server,
# Debian's etcd-server (v3.4.23, /usr/bin/etcd), which the module's client
# (go.etcd.io/etcd/client/v3 v3.7.3) speaks to. The package starts a
# system etcd on :2379; the tests start their own, so it is stopped.
# AMP_ETCD_BIN names another binary. A second run is quick.
set -euo pipefail

if [ -z "${AMP_ETCD_BIN:-}" ] && ! command -v etcd >/dev/null 2>&1; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends etcd-server
fi
if command -v systemctl >/dev/null 2>&1; then
  systemctl disable --now etcd >/dev/null 2>&1 || true
fi
echo "etcd: ${AMP_ETCD_BIN:-$(command -v etcd)} ($("${AMP_ETCD_BIN:-etcd}" --version | head -1))"

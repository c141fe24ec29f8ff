//go:build unix

package main

import (
	"errors"
	"testing"

	"github.com/ampbundle/ampbundle/agent/ledger/etcdledger/etcdtest"
	"github.com/ampbundle/ampbundle/amp"
)

// TestServeEtcdLedgerLosingQuorumRefusesAndReports: serve with --ledger
// etcd://… records invocations in the cluster (latency per call in
// /metrics); once the cluster is gone an invocation is refused before its
// handler runs with a retryable 5002, /readyz says the ledger does not
// answer and the error counter counts it (threat: a fleet that runs
// handlers without a record, or an operator blind to it).
func TestServeEtcdLedgerLosingQuorumRefusesAndReports(t *testing.T) {
	c := etcdtest.Start(t, 3)
	db, key := serveStore(t)
	cfg := writeConfig(t, map[string]any{"allow": []string{"*=org.example.translate.text"},
		"handlers": map[string]any{"org.example.translate.text:2.1.0": okHandler}})
	r := startServe(t, "--db", db, "--key", key, "--config", cfg, "--metrics-listen", "127.0.0.1:0", "--ledger", c.URL("cli"))
	cl := newTestClient(t, r.url, r.did)
	params := map[string]any{"text": "hello", "target": "fr"}
	if _, err := invokeID(t, cl, "org.example.translate.text:2.1.0", params, 0); err != nil {
		t.Fatal(err)
	}
	if _, rep := getReady(t, r.url); hasProblem(rep, "ledger", "ledger_unavailable", "") {
		t.Fatalf("ledger reported unavailable with the cluster up: %+v", rep)
	}
	fams := scrape(t, r.metrics)
	// Running makes no etcd call: the claim wrote the running entry (FLEET-11).
	for _, op := range []string{"claim", "finish"} {
		if n, ok := value(fams, "ampagent_ledger_call_duration_seconds", map[string]string{"op": op}); !ok || n < 1 {
			t.Fatalf("no ledger latency for %s: %v %v", op, n, ok)
		}
	}
	for i := range c.Members {
		c.Kill(i)
	}
	if _, err := invokeID(t, cl, "org.example.translate.text:2.1.0", params, 0); !errors.Is(err, amp.CodeUnavailable) {
		t.Fatalf("without etcd: %v, want 5002", err)
	}
	if _, rep := getReady(t, r.url); !hasProblem(rep, "ledger", "ledger_unavailable", "") {
		t.Fatalf("/readyz does not report the ledger: %+v", rep)
	}
	if n, ok := value(scrape(t, r.metrics), "ampagent_ledger_errors_total", map[string]string{"op": "claim"}); !ok || n < 1 {
		t.Fatalf("ledger errors not counted: %v %v", n, ok)
	}
}

// TestServeEtcdLedgerRefusesBadURLAndPlaintextRemote: a malformed etcd
// URL, a plaintext etcd off this host, or TLS flags without an etcd
// ledger are refused at start (threat: quotas and replies sent in clear,
// or a typo that silently falls back to a local ledger).
func TestServeEtcdLedgerRefusesBadURLAndPlaintextRemote(t *testing.T) {
	db, key := serveStore(t)
	for _, args := range [][]string{
		{"--ledger", "etcd://nohostport"},
		{"--ledger", "etcd://10.1.2.3:2379"},
		{"--ledger", "etcd://127.0.0.1:2379/a b"},
		{"--etcd-ca", "/nonexistent"},
		{"--ledger", "etcd://127.0.0.1:2379", "--etcd-cert", "x.pem"},
	} {
		if code, exit := serveFails(t, append([]string{"--db", db, "--key", key, "--listen", "127.0.0.1:0"}, args...)...); code != "usage" || exit != 2 {
			t.Errorf("%v: %s exit %d, want usage exit 2", args, code, exit)
		}
	}
}

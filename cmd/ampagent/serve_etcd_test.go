//go:build unix

package main

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/agent/ledger/etcdledger/etcdtest"
	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/client"
	"github.com/ampbundle/ampbundle/keyfile"
	"github.com/ampbundle/ampbundle/transport/amphttp"
)

// waitLedgerReady polls /readyz until its ledger problem is present
// (want) or absent (!want), failing the test after etcdtest.Settle.
func waitLedgerReady(t *testing.T, url string, want bool) {
	t.Helper()
	var rep readyReport
	for deadline := time.Now().Add(etcdtest.Settle); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if _, rep = getReady(t, url); hasProblem(rep, "ledger", "ledger_unavailable", "") == want {
			return
		}
	}
	t.Fatalf("/readyz: ledger_unavailable is %v after %v, want %v: %+v", !want, etcdtest.Settle, want, rep)
}

// invokeServed invokes params until it succeeds, retrying the retryable
// 5002 refusals of a ledger that does not answer yet (as a client
// following RFC 001 §15.3 would), and fails the test on any other error
// or when etcdtest.Settle passes.
func invokeServed(t *testing.T, cl *client.Client, params map[string]any) {
	t.Helper()
	deadline := time.Now().Add(etcdtest.Settle)
	for {
		_, err := invokeID(t, cl, "org.example.translate.text:2.1.0", params, 0)
		if err == nil {
			return
		}
		if !errors.Is(err, amp.CodeUnavailable) || time.Now().After(deadline) {
			t.Fatalf("invocation with the cluster up: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// retryingClient is newTestClient's client making two attempts, sleep
// called between them: it retries only a delivery failure or an ERROR
// whose retry flag is true (RFC 001 §15.3).
func retryingClient(t *testing.T, url, peer string, sleep func(context.Context, time.Duration) error) *client.Client {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	id, err := (&keyfile.Keys{Ed25519: priv}).Identity("")
	if err != nil {
		t.Fatal(err)
	}
	tr, err := amphttp.NewTransport(url, 4)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(client.Config{Identity: id, Peer: peer, Transport: tr, Now: time.Now, Rand: rand.Reader,
		Retry: client.Retry{MaxAttempts: 2, Sleep: sleep}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// ledgerErrors sums ampagent_ledger_errors_total over the ledger's
// operations.
func ledgerErrors(t *testing.T, url string) float64 {
	t.Helper()
	var n float64
	if f := scrape(t, url)["ampagent_ledger_errors_total"]; f != nil {
		for _, m := range f.Metric {
			n += m.GetCounter().GetValue()
		}
	}
	return n
}

// TestServeEtcdLedgerLosingQuorumRefusesAndReports: serve with --ledger
// etcd://… records invocations in the cluster (latency per call in
// /metrics); once the cluster is gone an invocation is refused before its
// handler runs with a retryable 5002, /readyz says the ledger does not
// answer and the error counter counts it; once the members are back,
// /readyz clears and invocations are served again (threat: a fleet that
// runs handlers without a record, an operator blind to it, or an agent
// that stays refusing after etcd recovers).
func TestServeEtcdLedgerLosingQuorumRefusesAndReports(t *testing.T) {
	c := etcdtest.Start(t, 3)
	db, key := serveStore(t)
	cfg := writeConfig(t, map[string]any{"allow": []string{"*=org.example.translate.text"},
		"handlers": map[string]any{"org.example.translate.text:2.1.0": okHandler}})
	r := startServe(t, "--db", db, "--key", key, "--config", cfg, "--metrics-listen", "127.0.0.1:0", "--ledger", c.URL("cli"))
	cl := newTestClient(t, r.url, r.did)
	params := map[string]any{"text": "hello", "target": "fr"}
	waitLedgerReady(t, r.url, false)
	invokeServed(t, cl, params)
	fams := scrape(t, r.metrics)
	// Running makes no etcd call: the claim wrote the running entry (FLEET-11).
	for _, op := range []string{"claim", "finish"} {
		if n, ok := value(fams, "ampagent_ledger_call_duration_seconds", map[string]string{"op": op}); !ok || n < 1 {
			t.Fatalf("no ledger latency for %s: %v %v", op, n, ok)
		}
	}
	before := ledgerErrors(t, r.metrics)
	for i := range c.Members {
		c.Kill(i)
	}
	// The refusal counts the first etcd call that failed: the claim, or
	// the grant of its expiry bucket's lease when the invocation falls in
	// a new bucket (FLEET-6), so every operation's errors are summed.
	retried := 0
	rcl := retryingClient(t, r.url, r.did, func(context.Context, time.Duration) error { retried++; return nil })
	if _, err := invokeID(t, rcl, "org.example.translate.text:2.1.0", params, 0); !errors.Is(err, amp.CodeUnavailable) || retried != 1 {
		t.Fatalf("without etcd: %v after %d retries, want 5002 with retry true (one retry of two attempts)", err, retried)
	}
	waitLedgerReady(t, r.url, true)
	if n := ledgerErrors(t, r.metrics); n <= before {
		t.Fatalf("ledger errors not counted: %v, %v before the cluster went", n, before)
	}
	for i := range c.Members {
		c.Restart(i)
	}
	c.WaitLeader(etcdtest.Settle)
	waitLedgerReady(t, r.url, false)
	invokeServed(t, cl, params)
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

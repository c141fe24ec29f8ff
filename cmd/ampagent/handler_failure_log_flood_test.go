//go:build unix

package main

import (
	"strings"
	"testing"
)

// TestHandlerFailureLogFloodKeepsNamedCallers: a stranger (admitted by a
// "*" rule) invokes a capability whose program fails on its params, again
// and again; each failure logs "handler program failed" with the
// program's stderr, one kind under --log-rate (threat: the stranger spends
// the kind's burst and the failure line of a caller an allow rule names,
// with the stderr excerpt the operator needs, is held back, because the
// handler's lines did not carry caller=named, which the throttle never
// holds back: docs/CLI.md, "Log volume"). The handler's lines say
// caller=named or other, as the message lines do (CLI-36).
func TestHandlerFailureLogFloodKeepsNamedCallers(t *testing.T) {
	db, key := serveStore(t)
	namedID := newNamedCaller(t)
	cfg := writeConfig(t, map[string]any{
		"allow": []string{"*=org.example.", namedID.DID() + "=org.example."},
		"handlers": map[string]any{"org.example.translate.text:2.0.0": map[string]any{"command": []string{"/bin/sh", "-c",
			`echo "failed for $AMP_CALLER" >&2; exit 3`}}},
	})
	r := startServe(t, "--db", db, "--key", key, "--config", cfg, "--log-rate", "1")
	stranger := newTestClient(t, r.url, r.did)
	params := map[string]any{"text": "hello", "target": "fr"}
	for range 15 { // the burst is ten seconds' worth of --log-rate
		if _, err := invokeID(t, stranger, "org.example.translate.text:2.0.0", params, 0); err == nil {
			t.Fatal("the failing program succeeded")
		}
	}
	named := namedID.client(r.url, r.did)
	if _, err := invokeID(t, named, "org.example.translate.text:2.0.0", params, 0); err == nil {
		t.Fatal("the failing program succeeded")
	}
	res := r.stop()
	for _, line := range strings.Split(res.stderr, "\n") {
		if strings.Contains(line, "handler program failed") && strings.Contains(line, "failed for "+namedID.DID()) {
			return
		}
	}
	t.Fatalf("the named caller's handler failure line was held back:\n%s", res.stderr)
}

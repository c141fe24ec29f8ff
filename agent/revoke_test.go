package agent

import (
	"context"
	"crypto/ed25519"
	"errors"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/capability"
)

// TestRevocationOfInstalledBundleHandlerNeverRuns: once a revocation of the
// publisher key reaches the store, the capability the agent served a
// moment before fails closed with 5002 and its handler never runs again,
// even though the bundle stays installed.
func TestRevocationOfInstalledBundleHandlerNeverRuns(t *testing.T) {
	e := newEnv(t)
	c := e.client(e.caller, false)
	id, _ := capability.ParseID("org.agentries.code-review:2.1.0")
	p, _ := amp.Marshal(goodParams)
	if _, _, err := c.Invoke(context.Background(), capability.Invoke{ID: id, Params: p}); err != nil {
		t.Fatal(err)
	}
	key := seedKey(21)
	r := &bundle.Revocation{Format: bundle.RevocationFormat, Scope: "org.agentries", CreatedAt: "2026-11-22T00:00:00Z",
		Keys: []string{amp.DIDKey(key.Public().(ed25519.PublicKey))}}
	stmt, err := bundle.SignRevocation(r, []ed25519.PrivateKey{key})
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.store.ApplyRevocation(stmt)
	if err != nil || len(res.FailedClosed) != 1 {
		t.Fatalf("%+v %v", res, err)
	}
	for i := 0; i < 3; i++ {
		_, _, err = c.Invoke(context.Background(), capability.Invoke{ID: id, Params: p})
		if !errors.Is(err, amp.CodeUnavailable) {
			t.Fatalf("after revocation: %v", err)
		}
	}
	if e.count("org.agentries.code-review:2.1.0").Load() != 1 {
		t.Fatal("the handler ran after its bundle was revoked")
	}
	if bs, _ := e.store.Bundles(); len(bs) != 2 {
		t.Fatalf("the revoked bundle should stay installed (and listed): %+v", bs)
	}
}

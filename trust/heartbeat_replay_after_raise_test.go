package trust_test

import (
	"crypto/ed25519"
	"errors"
	"testing"

	"github.com/ampbundle/ampbundle/trust"
)

// TestOldCoSignedHeartbeatReplayedAfterARaiseCannotUnpinAStaleLine: the
// replay d36ff84 accepts (TRUST-9 "the price"). org.example needs 1 key;
// its officers k1 and k2 once co-signed a heartbeat saying the installed
// version is current (H0, published, kept by every mirror). Later k3 says
// the line is 5 versions ahead (H1): the installed bundle is stale. The
// owners raise the threshold to 2 — an act that only narrows trust, and
// TRUST-12 says the stale line stays pinned. Anyone holding the old H0
// then hands it to the store: H1 no longer meets today's threshold, and
// before, it did not hold H0 back, H0 replaced it, and the frozen bundle
// was served again, though H0 says nothing new (it is older in version
// and time than what the store knew); a store "never goes back". A kept
// heartbeat that still vouches under its recorded threshold (Vouches)
// now holds back any heartbeat of a lower version: heartbeat_replayed;
// only the created_at order is judged by today's threshold alone (TRUST-9).
func TestOldCoSignedHeartbeatReplayedAfterARaiseCannotUnpinAStaleLine(t *testing.T) {
	k1, k2, k3 := seedKey(0x95), seedKey(0x96), seedKey(0x97)
	st := state(t, map[string][]string{"k1": {"org.example"}, "k2": {"org.example"}, "k3": {"org.example"}},
		map[string]ed25519.PrivateKey{"k1": k1, "k2": k2, "k3": k3})
	st.Freshness["org.example"] = trust.Freshness{MaxVersions: 1}
	const line = "org.example.translate"
	v := st.Installed[line].Version
	h0 := heartbeat(t, v, "2026-11-01T00:00:00Z", k1, k2)
	st, _, err := trust.ApplyHeartbeat(st, h0, now)
	if err != nil {
		t.Fatal(err)
	}
	st, _, err = trust.ApplyHeartbeat(st, heartbeat(t, v+5, "2026-11-20T00:00:00Z", k3), now)
	if err != nil {
		t.Fatal(err)
	}
	if trust.Stale(st, line) == "" {
		t.Fatal("precondition: the line is stale")
	}
	st, _, err = trust.SetThreshold(st, "org.example", 2)
	if err != nil {
		t.Fatal(err)
	}
	if trust.Stale(st, line) == "" {
		t.Fatal("precondition (TRUST-12): the raise keeps the line stale")
	}
	next, _, err := trust.ApplyHeartbeat(st, h0, now)
	if errors.Is(err, trust.ErrHeartbeatOlder) {
		return
	}
	if err == nil && trust.Stale(next, line) == "" {
		t.Fatalf("after a threshold raise, an old co-signed heartbeat (version %d, 2026-11-01) replayed over the kept one "+
			"(version %d, 2026-11-20) took the store back and served the frozen bundle again: a raise plus a replay unpins a stale line", v, v+5)
	}
	if err != nil {
		t.Fatalf("want heartbeat_replayed, got %v", err)
	}
}

package resolver

import (
	"testing"

	"github.com/ampbundle/ampbundle/bundle"
)

// TestOneScopeCannotFillTheHeartbeatCapForEveryOtherScope: the cap on
// heartbeats of lines not installed (MaxHeartbeatsNotInstalled, lowered
// here) was store-wide. One org.example key (threshold 1) fills it with
// heartbeats of names under its own scope that will never be installed;
// com.acme's publisher's heartbeat of its own new line must not then be
// refused limit_exceeded: the cap is a share per signing key
// (docs/SPEC-DECISIONS.md TRUST-17), so one scope's heartbeats cannot
// refuse another's.
func TestOneScopeCannotFillTheHeartbeatCapForEveryOtherScope(t *testing.T) {
	defer func(n int) { maxHeartbeatsNotInstalled = n }(maxHeartbeatsNotInstalled)
	maxHeartbeatsNotInstalled = 3
	s := newStore(t) // example (org.example), acme (com.acme)
	example, acme := sampleKey(t, "example-publisher"), sampleKey(t, "acme-publisher")
	for _, id := range []string{"org.example.junk1", "org.example.junk2", "org.example.junk3"} {
		if _, err := s.ApplyHeartbeat(heartbeat(t, id, 1, testNow, example)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.ApplyHeartbeat(heartbeat(t, "com.acme.newline", 1, testNow, acme)); err != nil {
		t.Fatalf("com.acme's heartbeat of its own line was refused because org.example's key filled the store-wide cap: %v", err)
	}
	// The key that filled its share is still bounded.
	if _, err := s.ApplyHeartbeat(heartbeat(t, "org.example.junk4", 1, testNow, example)); err == nil {
		t.Fatal("a key past its share of heartbeats of lines not installed had one more kept: the cap bounds nothing")
	} else {
		expectName(t, err, bundle.ErrTooLarge)
	}
}

package agent

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
)

// TestRetryWithALongerTTLIsNotRunTwice: a sender retries an invocation
// with the same id (RFC 001 §16.3), re-signed with a longer ttl (the id
// pins ts within 1 s, not the ttl: a client that seals each attempt anew
// and backs its ttl off). The retry is answered from the ledger, but the
// entry keeps the first copy's expiry (ledger.Start returns Done without
// extending it; Agent.expiry of the first copy): once the first copy's
// ts + ttl + skew has passed and the entry is swept, anyone who captured
// the retry — still valid for its own ttl — replays it, and the handler
// runs a second time for an id the agent already answered. Threat: an
// exactly-once invocation executed again by a third party's replay,
// within the ttl the sender signed. A duplicate that verifies with a
// later expiry now extends its entry's, durably, before it is answered
// (ledger.ExtendingStore; docs/SPEC-DECISIONS.md AGENT-14), and the
// replay is answered with the recorded reply, byte-identical.
func TestRetryWithALongerTTLIsNotRunTwice(t *testing.T) {
	e := newEnv(t)
	runs := e.count(reviewID)
	first, msg := e.sealTTL(e.caller, amp.TypeCapInvoke, invokeBody(t, reviewID, goodParams), time.Minute)
	recorded, err := e.agent.Handle(context.Background(), msg)
	if err != nil {
		t.Fatal(err)
	}
	if runs.Load() != 1 {
		t.Fatalf("the first copy ran %d times, want 1", runs.Load())
	}
	// The retry, 30 s later: same id and ts, re-signed with ttl 1 h.
	e.clock.Add(30 * time.Second)
	retry := *first
	retry.TTL = uint64(time.Hour.Milliseconds())
	must(t, amp.Sign(&retry, e.caller.SigningKey))
	captured := retry.Encode()
	if _, err := e.agent.Handle(context.Background(), captured); err != nil {
		t.Fatal(err)
	}
	if runs.Load() != 1 {
		t.Fatalf("the retry ran the handler again (%d runs): not even answered from the ledger", runs.Load())
	}
	// The first copy's entry expires (ts + 1 min + skew) and is swept;
	// the retry is valid for almost an hour more.
	e.clock.Add(5 * time.Minute)
	if _, err := e.agent.ledger.Sweep(e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	out, err := e.agent.Handle(context.Background(), captured)
	if err != nil {
		t.Fatalf("the replayed retry did not verify (%v): the test shows nothing", err)
	}
	if runs.Load() != 1 {
		t.Fatalf("a replay of the re-signed retry, still within its own ttl, ran the handler again (%d runs): "+
			"the ledger entry kept the first copy's expiry and was swept while a valid copy of the id was still out", runs.Load())
	}
	// Answered from the ledger: the recorded reply, byte-identical (its
	// own ttl is the first copy's: see AGENT-14).
	if !bytes.Equal(out, recorded) {
		t.Fatal("the replay was not answered with the recorded reply")
	}
}

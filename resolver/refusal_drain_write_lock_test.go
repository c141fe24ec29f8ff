package resolver

import (
	"bytes"
	"context"
	"testing"
	"time"
)

// TestRefusalDrainDoesNotHoldTheWriteLock: attack: a refused stream that
// stays open, with no cancel (an admin-socket caller that keeps its
// connection and sends nothing; any local user of the socket). The drain
// of its rest ran in Import's deferred audit under s.mu, with no time
// bound, so every other import (and sync, and trust change) waited for
// as long as the peer kept the stream open: one refused request was a
// store-wide outage. Now the drain runs without the store's write lock
// (only the record's own transaction needs the store): a genuine import
// goes through meanwhile.
func TestRefusalDrainDoesNotHoldTheWriteLock(t *testing.T) {
	s := newStore(t)
	// The drain's own stall rule, lengthened past the wait below: only
	// the peer ending its stream would end the drain.
	lowerLimits(s, func(l *storeLimits) { l.drainGrace = time.Minute })
	good := variant(t, 2, nil)
	done, end := refusedOpenStream(t, s, context.Background())
	defer end()
	waitInDrain(t) // the refused Import is in its drain
	imported := make(chan error, 1)
	go func() {
		_, err := s.Import(context.Background(), bytes.NewReader(good), ImportOptions{})
		imported <- err
	}()
	select {
	case err := <-imported:
		if err != nil {
			t.Fatalf("the genuine import: %v", err)
		}
	case <-time.After(30 * time.Second): // room for a loaded machine
		if !inDrain() {
			t.Fatal("test setup: the genuine import is stuck, but no Import is in the drain of a refused stream")
		}
		end()
		<-done
		<-imported
		t.Fatal("a genuine import waited 30s (and waits as long as the peer likes) behind the drain of a refused stream " +
			"that stays open: the drain holds the store's write lock with no time bound")
	}
	end()
	<-done // the refusal's audit is written before the store is checked and closed
}

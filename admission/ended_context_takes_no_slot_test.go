package admission

import (
	"context"
	"testing"
)

// TestEndedContextNeverTakesAFreeSlot: a connection whose peer is gone
// (its context ended) still had its buffered messages offered to Enter,
// and with a slot free Enter's select picked at random between the slot
// and the ended context: about half that backlog was admitted, verified
// and run for nobody. Enter refuses an ended context before queueing.
func TestEndedContextNeverTakesAFreeSlot(t *testing.T) {
	f := NewFair(4, DefaultPeerQueue)
	ctx, cancel := context.WithCancel(WithPeer(context.Background(), "192.0.2.7"))
	cancel()
	for i := range 200 {
		_, done, err := f.Enter(ctx)
		if err == nil {
			done()
			t.Fatalf("attempt %d: a message whose context had ended took a free slot", i)
		}
	}
	live, done, err := f.Enter(WithPeer(context.Background(), "192.0.2.8"))
	if err != nil || live == nil {
		t.Fatalf("a live caller was refused after the ended ones: %v", err)
	}
	done()
}

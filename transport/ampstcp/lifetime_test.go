package ampstcp

import (
	"testing"
	"time"
)

// TestWaitingFrameGivesUpAtTheEndOfItsLifetime: a frame waiting for the
// server's budget to grow, or a small one waiting for room, gives up when
// its lifetime ends (receive: transport.Lifetime(FrameTimeout) from its
// header), although the budget stays full and the connection open, and
// what it held is given back (threat: a frame waiting in grow kept its
// charges, its clock stopped by Exclude, for as long as the budget
// stayed full). The lifetime's end is a channel the test closes: no
// timing.
func TestWaitingFrameGivesUpAtTheEndOfItsLifetime(t *testing.T) {
	const limit, msg = 2 << 20, 512 << 10
	b := newServerBudget(limit, msg)
	holder := b.begin()
	for b.inUse() < limit && b.grow(holder, readChunk, closedStop()) {
	}
	p := b.begin()
	stop := make(chan struct{}) // the connection stays open
	defer close(stop)
	for _, wait := range []struct {
		name string
		try  func(expiry) bool
	}{
		{"to grow", func(e expiry) bool { return b.growBy(p, readChunk, stop, e) }},
		{"as a small frame", func(e expiry) bool { return b.acquireSmallBy(readChunk, stop, e) }},
	} {
		ended := make(chan time.Time)
		got := make(chan bool, 1)
		go func() { got <- wait.try(func() <-chan time.Time { return ended }) }()
		for b.waiting() != 1 {
			time.Sleep(time.Millisecond)
		}
		close(ended)
		if <-got {
			t.Fatalf("a frame waiting %s was granted with the budget full", wait.name)
		}
		if n := b.waiting(); n != 0 {
			t.Fatalf("after its lifetime, %d frames still wait", n)
		}
	}
	b.abort(p)
	b.abort(holder)
	if n := b.inUse(); n != 0 {
		t.Fatalf("%d bytes still charged", n)
	}
}

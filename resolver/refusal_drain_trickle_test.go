package resolver

import (
	"bytes"
	"context"
	"io"
	"testing"
	"time"
)

// TestRefusalDrainOfATrickledStreamStopsAtTheMinimumDataRate: attack: a
// caller whose stream the store refused keeps it alive by trickling a
// byte now and then (no stall, no cancel), so that the drain of its rest
// (up to MaxRefusalDrain, 1 GiB) lasts as long as it likes, a goroutine
// and the caller's request held. The drain now keeps the transport
// bindings' minimum data rate (the store's drainRate after its
// drainGrace, storeLimits; shortened here): it gives up, the refusal is
// audited without a file hash and recorded nowhere, and Import returns
// while the stream is still open.
func TestRefusalDrainOfATrickledStreamStopsAtTheMinimumDataRate(t *testing.T) {
	s := newStore(t)
	lowerLimits(s, func(l *storeLimits) { l.drainGrace = 100 * time.Millisecond })
	pr, pw := io.Pipe()
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		defer pw.Close()
		if _, err := pw.Write(bytes.Repeat([]byte("not a bundle at all\n"), 256)); err != nil {
			return
		}
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
				if _, err := pw.Write([]byte{'x'}); err != nil {
					return
				}
			}
		}
	}()
	done := make(chan error, 1)
	go func() {
		_, err := s.Import(context.Background(), pr, ImportOptions{})
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("junk was imported")
		}
	case <-time.After(3 * time.Second):
		pr.CloseWithError(io.ErrClosedPipe)
		<-done
		t.Fatal("a refused Import whose caller trickles a byte every 20ms has not returned after 3s: its drain keeps no minimum data rate " +
			"(up to MaxRefusalDrain, 1 GiB, at the caller's pace)")
	}
	lastRefusalUnhashed(t, s)
}

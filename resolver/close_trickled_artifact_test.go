package resolver

import (
	"bytes"
	"context"
	"io"
	"path/filepath"
	"testing"
	"time"
)

// steadyTrickle yields r a step at a time, one every pause: a stream that
// keeps a steady rate (every Read returns at once with bytes), never
// blocked.
type steadyTrickle struct {
	r     io.Reader
	step  int
	pause time.Duration
}

func (tr *steadyTrickle) Read(p []byte) (int, error) {
	time.Sleep(tr.pause)
	return tr.r.Read(p[:min(len(p), tr.step)])
}

// TestCloseDoesNotWaitForAWholeArtifactOfATrickledImport: attack: Close
// cancels every Import it waits for (Store.enter, beginImport), but an
// Import looked at its context only between artifacts (stage) and not
// at all while bundle.NewReader read the manifest: one reading a single
// large artifact from a stream that keeps the minimum data rate (every
// Read returns bytes at once, so it is never "blocked in a Read", the
// one wait Close documents) held Close until that artifact was read
// whole: MaxArtifactSize at 128 KiB/s, hours for a 1 GiB artifact. The
// agent's shutdown (SIGTERM, its admin socket closed first) hung that
// long behind an `ampbundle import` or a sync whose source trickles;
// below, Close waited for the 4 MiB artifact trickled at 640 KiB/s
// (about 6 s). Now the Import's stream (importStream) checks the
// context before every Read, and stops once it has been done for
// cancelGrace, so Close returns within that and a Read.
func TestCloseDoesNotWaitForAWholeArtifactOfATrickledImport(t *testing.T) {
	// Opened here, not with newStore: its cleanup checks the store, which
	// this test closes.
	s, err := Open(filepath.Join(t.TempDir(), "store.db"), Options{Now: func() time.Time { return testNow }, Create: true})
	if err != nil {
		t.Fatal(err)
	}
	k := sampleKey(t, "example-publisher")
	if err := s.TrustAdd("example", pub(k), []string{"org.example"}); err != nil {
		t.Fatal(err)
	}
	const size = 4 << 20
	data := largeBundle(t, 1, size)
	done := make(chan error, 1)
	go func() {
		_, err := s.Import(context.Background(), &steadyTrickle{r: bytes.NewReader(data), step: 32 << 10, pause: 50 * time.Millisecond}, ImportOptions{})
		done <- err
	}()
	time.Sleep(500 * time.Millisecond) // the Import holds the lock, reading the artifact
	start := time.Now()
	closed := make(chan struct{})
	go func() {
		s.Close()
		close(closed)
	}()
	const bound = 2 * time.Second
	select {
	case <-closed:
	case <-time.After(bound):
		<-closed
		t.Fatalf("Close took %v: it waited for the Import in flight to read its whole %d MiB artifact from a stream "+
			"that keeps its rate, though it had cancelled it", time.Since(start).Round(100*time.Millisecond), size>>20)
	}
	// Stopped by Close: cancelled (store_io), neither a refusal nor
	// truncated.
	expectName(t, <-done, ErrStoreIO)
}

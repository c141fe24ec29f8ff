package resolver

import (
	"bytes"
	"context"
	"io"
	"runtime"
	"strings"
	"testing"
	"time"
)

// inDrain reports whether some goroutine is in the refused Import's drain
// (so that a test fails for the drain, not for a reader still waiting for
// the bytes it judges by).
func inDrain() bool {
	buf := make([]byte, 1<<20)
	stacks := string(buf[:runtime.Stack(buf, true)])
	return strings.Contains(stacks, "auditImportRefusal") || strings.Contains(stacks, "drainRefused")
}

// refusedOpenStream starts an Import of a stream that is refused at once
// (junk: unknown_format) and then stays open, sending nothing more, as a
// local caller of the admin socket can keep its request body. It returns
// the channel the Import's error arrives on and a func that ends the
// stream (deferred by the caller, so that the Import returns in the end).
// waitInDrain waits until a refused Import is in its drain (inDrain):
// the refusal is judged. The 20 s is a hang guard for a loaded machine,
// where a fixed sleep before the check was once too short.
func waitInDrain(t *testing.T) {
	t.Helper()
	for end := time.Now().Add(20 * time.Second); !inDrain(); time.Sleep(time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("test setup: no Import is in the drain of a refused stream")
		}
	}
}

func refusedOpenStream(t *testing.T, s *Store, ctx context.Context) (<-chan error, func()) {
	t.Helper()
	pr, pw := io.Pipe()
	go func() {
		// Write blocks until the store has read it all: the refusal is
		// judged on these bytes.
		_, _ = pw.Write(bytes.Repeat([]byte("not a bundle at all\n"), 256))
	}()
	done := make(chan error, 1)
	go func() {
		_, err := s.Import(ctx, pr, ImportOptions{})
		done <- err
	}()
	return done, func() { pw.Close() }
}

// TestRefusalDrainEndsWhenTheCallerCancels: attack: a local caller (the
// admin socket, or a sync whose caller went away) sends a few bytes the
// store refuses and then keeps the stream open without sending more. The
// refused Import drains what is left of the stream (up to
// MaxRefusalDrain, 1 GiB) to record the refusal under the whole file's
// hash (MIRROR-13); with io.CopyN, which never looks at ctx, cancelling
// did not end the Import: it returned only when the peer ended the
// stream. Now the drain stops when ctx is done (the refusal then audited
// and recorded nowhere, as for any stream not read whole), and Import
// returns promptly.
func TestRefusalDrainEndsWhenTheCallerCancels(t *testing.T) {
	s := newStore(t)
	// The drain's own stall rule, lengthened past the wait below: only
	// the cancel can end the drain in time.
	lowerLimits(s, func(l *storeLimits) { l.drainGrace = time.Minute })
	ctx, cancel := context.WithCancel(context.Background())
	done, end := refusedOpenStream(t, s, ctx)
	defer end()
	waitInDrain(t) // the refusal is judged; the drain waits
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second): // promptly: room for a loaded machine
		end()
		<-done
		t.Fatal("a refused Import whose ctx was cancelled 10s ago has not returned: its drain of the rest of the stream ignores ctx " +
			"and holds the store's write lock until the peer ends the stream")
	}
	lastRefusalUnhashed(t, s)
}

// lastRefusalUnhashed fails t unless the last audit entry of s is the
// refusal of a stream the store did not read whole: import_refused
// without a file hash (and so recorded nowhere).
func lastRefusalUnhashed(t *testing.T, s *Store) {
	t.Helper()
	entries, err := s.Audit()
	if err != nil {
		t.Fatal(err)
	}
	if last := entries[len(entries)-1]; last.Action != "import_refused" || last.FileSHA256 != nil {
		t.Fatalf("the last audit entry after a refusal whose drain gave up: %+v, want import_refused without a file hash (not read whole)", last)
	}
}

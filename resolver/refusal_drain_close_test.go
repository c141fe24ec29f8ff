package resolver

import (
	"context"
	"path/filepath"
	"testing"
	"time"
)

// TestRefusalAuditSurvivesCloseDuringTheDrain: attack: a
// caller sends a few bytes the store refuses and keeps the stream open;
// the drain now runs without s.mu, so nothing stops Store.Close (agent
// shutdown, a CLI's deferred Close after its ctx is cancelled) from
// closing the database while the refused Import is still in its drain.
// When the stream then ends (or the drain gives up), the refusal's audit
// transaction runs on a closed database, fails, and the error is dropped:
// the refusal is audited nowhere, so a refused file leaves no trace in the
// chained audit log (MIRROR-11: every refusal is audited). Now Close
// stops the drains in flight, as a cancel does, and waits for their
// refusal's audit (unhashed) before closing the database.
func TestRefusalAuditSurvivesCloseDuringTheDrain(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.db")
	s, err := Open(path, Options{Now: func() time.Time { return testNow }, Create: true})
	if err != nil {
		t.Fatal(err)
	}
	// The drain's own stall rule, lengthened past the waits below: only
	// Close can end the drain in time.
	lowerLimits(s, func(l *storeLimits) { l.drainGrace = time.Minute })
	done, end := refusedOpenStream(t, s, context.Background())
	defer end()
	waitInDrain(t) // the refusal is judged; the drain waits
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatalf("Close during a drain: %v", err)
		}
	case <-time.After(10 * time.Second): // at once: room for a loaded machine
		end()
		<-done
		t.Fatal("Close has not returned 10s after it began while a refused Import drained a stream its caller keeps open: " +
			"the drain must stop at once, as on a cancel")
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the refused Import has not returned 10s after Close stopped its drain")
	}
	if err := s.Close(); err != nil {
		t.Fatalf("a second Close: %v", err)
	}
	r, err := Open(path, Options{Now: func() time.Time { return testNow }})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	entries, err := r.Audit()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Action == "import_refused" {
			if len(e.FileSHA256) != 0 {
				t.Fatalf("the refusal of a stream Close stopped reading is audited under a hash of the bytes read so far (%x)", e.FileSHA256)
			}
			return
		}
	}
	t.Fatal("a refused Import whose drain was in flight when the store was closed left no import_refused audit entry: " +
		"the audit transaction ran on the closed database and its error was dropped")
}

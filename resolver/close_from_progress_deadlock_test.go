package resolver

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"
)

// TestCloseFromProgressDoesNotDeadlockBehindAnImportWaitingForTheLock:
// attack: Store.Close does not wait for an Import inside its Progress
// callback, since the callback may be what calls Close (Store.Close,
// docs/SPEC-DECISIONS.md MIRROR-13). But that Import holds s.mu while
// its callback runs, and a second Import begun meanwhile was registered
// with Close before it took s.mu (review 21's beginImport) and waited
// for s.mu. A callback that called Close then waited, inside Close, for
// the second Import; the second waited for s.mu, which only the first's
// return frees: both Imports, Close and every later Close hung for ever
// (the cancel Close sends does not reach an Import blocked on
// s.mu.Lock). Now an Import registers with Close only once it holds s.mu
// (Store.enter): Close called from the callback returns, the first
// Import answers store_io, and the second, taking s.mu after Close
// began, is refused store_io.
func TestCloseFromProgressDoesNotDeadlockBehindAnImportWaitingForTheLock(t *testing.T) {
	// Opened here, not with newStore: its cleanup's Close would hang too.
	s, err := Open(filepath.Join(t.TempDir(), "store.db"), Options{Now: func() time.Time { return testNow }, Create: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.TrustAdd("example", pub(sampleKey(t, "example-publisher")), []string{"org.example"}); err != nil {
		t.Fatal(err)
	}
	data := largeBundle(t, 6, 16<<10)
	second := make(chan error, 1)
	first := make(chan error, 1)
	calls := 0
	go func() {
		_, err := s.Import(context.Background(), bytes.NewReader(data), ImportOptions{Progress: func(int64) {
			if calls++; calls != 2 {
				return
			}
			// A second caller's Import begins: registered with
			// Close, it waits for s.mu, which this Import holds.
			go func() {
				_, err := s.Import(context.Background(), bytes.NewReader(data), ImportOptions{})
				second <- err
			}()
			// Registered at once by review 21's code; given time to
			// wait for s.mu otherwise.
			for end := time.Now().Add(200 * time.Millisecond); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
				s.closeMu.Lock()
				n := s.inflight
				s.closeMu.Unlock()
				if n > 0 {
					break
				}
			}
			s.Close() // the callback closes the store, as the store allows
		}})
		first <- err
	}()
	select {
	case err := <-first:
		if err == nil {
			t.Fatal("the Import whose Progress callback closed the store succeeded")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close called from an Import's Progress callback has not returned after 5s: it waits for a second Import " +
			"registered with Close, which waits for s.mu, held by the Import inside the callback (deadlock)")
	}
	select {
	case err := <-second:
		if !errors.Is(err, ErrStoreIO) {
			t.Fatalf("the second Import, taking the write lock after Close began, answered %v, not store_io", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the second Import has not returned 5s after Close")
	}
}

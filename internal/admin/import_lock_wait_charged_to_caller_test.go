//go:build unix

package admin

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/admission"
	"github.com/ampbundle/ampbundle/resolver"
)

// TestImportWaitingForTheWriteLockIsNotCutForTheServersWait: attack:
// rateBodies started every request body's rate clock (its read
// deadline, FrameGrace from the request) before the handler, but an
// import reads its body only once it holds the store's write lock
// (resolver.Store.Import), which another write may hold for minutes (an
// import of a large bundle from sync or another caller, itself read at
// the minimum rate). The agent's own wait was charged to the caller: a
// caller that sent a genuine 1 MiB bundle at once, queued behind a
// write holding the lock for longer than FrameGrace, had its first Read
// fail on the passed deadline: the import cut, the caller told it
// failed though it did nothing wrong; 32 such callers queued behind one
// long import all failed the same way. Now the body's clock starts when
// the store first reads it (rateBody.begin), as an answer's starts at
// its first byte.
func TestImportWaitingForTheWriteLockIsNotCutForTheServersWait(t *testing.T) {
	store, err := resolver.Open(filepath.Join(t.TempDir(), "store.db"), resolver.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	data := bigBundle(t, store, 1<<20)
	srv, err := Serve(store, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	c, err := Dial(srv.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	// Another write holds the store's lock (an import whose stream is
	// slow to come: here, one that waits on a gate).
	gate := newStoreHolder()
	t.Cleanup(gate.release)
	first := make(chan error, 1)
	go func() {
		_, err := store.Import(context.Background(), gate, resolver.ImportOptions{})
		first <- err
	}()
	gate.awaitHolding(t, first)

	second := make(chan error, 1)
	go func() {
		_, err := c.Import(context.Background(), bytes.NewReader(data), resolver.ImportOptions{})
		second <- err
	}()
	time.Sleep(admission.FrameGrace + 2*time.Second) // the agent's own wait
	gate.release()
	<-first
	select {
	case err := <-second:
		if err != nil {
			t.Fatalf("a genuine %d KiB import sent at once, queued %v behind another write, failed: %v "+
				"(its body's rate clock ran while the agent, not the caller, made it wait)",
				len(data)>>10, admission.FrameGrace+2*time.Second, err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the queued import has not returned 10s after the lock was freed")
	}
}

//go:build unix

package mirror

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// TestSpoolFIFOSwappedInHoldsTheSyncForever: openPart removes anything but
// a regular file in a partial file's place before it writes there, but the
// partial file is then opened again, read-only, to judge its head and to
// hash it (inspectHead, downloadListed). Whoever may write the spool folder
// (MIRROR-16 only warns about one others may write) renames a FIFO over
// it while it downloads (inotify tells when it is made): an open of a FIFO
// for reading waits for a writer, for ever, and no context ends it, so the
// sync held the spool lock for good and every later sync of the store,
// revocations included, was refused store_in_use. Should: a spool file that
// is not a regular file is never waited on: the bundle is refused store_io
// (its partial file kept, as a head not delivered is) and the next run
// replaces it and imports the bundle.
//
// No clock: a writer opening the FIFO returns only once a reader opens it,
// and a sync that opened it for reading cannot end before that writer
// closes it; so the writer returning first is the sync waiting on it.
func TestSpoolFIFOSwappedInHoldsTheSyncForever(t *testing.T) {
	v1 := testBundle(t, 1)
	_, ts := startMirror(t, newStore(t, v1), nil)
	s := agentStore(t)
	spool := filepath.Join(filepath.Dir(s.Path()), "sync")
	if err := os.MkdirAll(spool, 0o700); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("no FIFO here: %v", err)
	}
	spare := filepath.Join(spool, "spare")
	if err := os.Link(fifo, spare); err != nil {
		t.Skipf("no hard link of a FIFO here: %v", err)
	}
	part := filepath.Join(spool, partName(IndexEntry{BundleID: "org.example.echo", SHA256: sum(v1)}))
	var swap sync.Once
	progress := func(_ string, done, total int64) {
		if done == total {
			swap.Do(func() {
				if err := os.Rename(spare, part); err != nil {
					t.Error(err)
				}
			})
		}
	}
	writer := make(chan *os.File, 1)
	go func() {
		f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			f = nil
		}
		writer <- f
	}()
	type result struct {
		rep *SyncReport
		err error
	}
	done := make(chan result, 1)
	go func() {
		rep, err := syncOnce(t, s, ts.URL, func(o *SyncOptions) { o.Progress = progress })
		done <- result{rep, err}
	}()
	var r result
	select {
	case w := <-writer:
		t.Error("the sync opened a FIFO put in its partial file's place for reading: without a writer it waits there for ever, holding the spool lock")
		if w != nil {
			w.Close() // the sync reads its end and goes on
		}
		r = <-done
	case r = <-done:
		rd, err := os.OpenFile(fifo, os.O_RDONLY|unix.O_NONBLOCK, 0)
		if err != nil {
			t.Fatal(err)
		}
		if w := <-writer; w != nil {
			w.Close()
		}
		rd.Close()
	}
	if r.err != nil {
		t.Fatal(r.err)
	}
	if t.Failed() {
		return
	}
	if len(r.rep.Items) != 1 || r.rep.Items[0].Error != "store_io" {
		t.Fatalf("want the bundle refused store_io: %+v", r.rep.Items)
	}
	rep, err := syncOnce(t, s, ts.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Items) != 1 || rep.Items[0].Outcome != OutcomeImported {
		t.Fatalf("the next run should replace the FIFO and import: %+v", rep.Items)
	}
}

package etcdledger

import (
	"context"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/agent/ledger"
)

// Attack: keep one key of a node busy, so that every clean-up round backs
// the whole cleaner off. A clean-up round skips a queued clean-up whose
// key has a clean-up or an Unclaim in flight (FLEET-21); it counted that
// skip as a failure, and each failed round doubles the cleaner's wait
// (OpTimeout, up to SessionTTL). A sender whose messages are refused by
// their checks while etcd is slow keeps an Unclaim of some key in flight
// for an OpTimeout each, and every given-up claim of every other caller
// of the node then waited out the backoff: their keys stayed Busy on
// every node meanwhile. Before: round reported failure for the skip. Now:
// a busy key is no failure; the end of the run that held it wakes the
// cleaner for the skipped clean-up.
func TestBusyKeyNeverBacksOffCleaner(t *testing.T) {
	bg, stop := context.WithCancel(context.Background())
	defer stop()
	s := &Store{bg: bg, o: Options{OpTimeout: time.Second, SessionTTL: 10 * time.Second}}
	cl := &s.cleaner
	cl.s, cl.q, cl.wake = s, map[cleanup]struct{}{}, make(chan struct{}, 1)
	cl.once.Do(func() {}) // no goroutine: the test runs the round
	k := ledger.Key{Sender: "did:example:slow-refusals", ID: [16]byte{0x22, 4}}
	c := cleanup{k: k, rev: 42, entry: true}
	cl.q[c] = struct{}{}
	cl.unclaiming(k, 1) // an Unclaim of k in flight
	if !cl.round() {
		t.Fatal("a round that only skipped a busy key reported failure: the whole cleaner backs off, up to SessionTTL")
	}
	cl.mu.Lock()
	_, queued := cl.q[c]
	cl.mu.Unlock()
	if !queued {
		t.Fatal("the skipped clean-up left the queue without running")
	}
	select { // a wake the round itself left
	case <-cl.wake:
	default:
	}
	cl.unclaiming(k, -1)
	select {
	case <-cl.wake:
	default:
		t.Fatal("the end of the Unclaim did not wake the cleaner for the clean-up skipped while its key was busy")
	}
}

package resolver

import (
	"sync"
	"testing"
	"time"
)

func TestReplayCache(t *testing.T) {
	s := newStore(t)
	id := [16]byte{1, 2, 3}
	exp := testNow.Add(time.Hour)
	st, reply, err := s.ReplayBegin("did:key:a", id, exp)
	if err != nil || st != ReplayNew || reply != nil {
		t.Fatalf("first: %v %v %v", st, reply, err)
	}
	if st, _, _ := s.ReplayBegin("did:key:a", id, exp); st != ReplayInProgress {
		t.Fatalf("second begin: %v", st)
	}
	// Another sender with the same id is another entry (RFC 001 §16.2).
	if st, _, _ := s.ReplayBegin("did:key:b", id, exp); st != ReplayNew {
		t.Fatalf("other sender: %v", st)
	}
	if err := s.ReplayComplete("did:key:a", id, []byte("reply-bytes"), exp); err != nil {
		t.Fatal(err)
	}
	st, reply, _ = s.ReplayBegin("did:key:a", id, exp)
	if st != ReplayDone || string(reply) != "reply-bytes" {
		t.Fatalf("done: %v %q", st, reply)
	}
	// Sweeping removes expired entries only.
	if n, err := s.ReplaySweep(exp.Add(-time.Second), 0); err != nil || n != 0 {
		t.Fatalf("early sweep: %d %v", n, err)
	}
	if n, err := s.ReplaySweep(exp.Add(time.Second), 0); err != nil || n != 2 || s.ReplayLen() != 0 {
		t.Fatalf("sweep: %d %v, %d left", n, err, s.ReplayLen())
	}
}

// TestReplayGroupCommit: many concurrent writers all land, and share
// commits.
func TestReplayGroupCommit(t *testing.T) {
	s := newStore(t)
	var wg sync.WaitGroup
	for i := 0; i < 200; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := [16]byte{byte(i), byte(i >> 8)}
			if _, _, err := s.ReplayBegin("did:key:a", id, testNow.Add(time.Hour)); err != nil {
				t.Error(err)
			}
			if err := s.ReplayComplete("did:key:a", id, []byte{byte(i)}, testNow.Add(time.Hour)); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if n := s.ReplayLen(); n != 200 {
		t.Fatalf("%d entries", n)
	}
	s.ReplaySweep(testNow.Add(2*time.Hour), 0)
}

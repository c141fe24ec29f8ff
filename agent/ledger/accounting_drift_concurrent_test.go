package ledger

import (
	"fmt"
	"math/rand"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// checkAccountsCover fails unless the write-ahead log's accounts charge
// every sender, and in total, at least what its index holds (more only
// for reservations on their way to the index), and no sender below zero:
// a balance below what is held is credit a concurrent reservation spends
// past the share.
func checkAccountsCover(s *WALStore) error {
	s.idx.RLock()
	defer s.idx.RUnlock()
	charged, _, per, _, _ := indexHolds(s)
	s.acct.mu.Lock()
	defer s.acct.mu.Unlock()
	if s.acct.total < charged {
		return fmt.Errorf("the accounts charge %d bytes in total; the index holds %d", s.acct.total, charged)
	}
	for snd, v := range per {
		if s.acct.per[snd] < v || s.acct.byBucket[snd] < v {
			return fmt.Errorf("sender %s holds %d bytes; its accounts say %d (principal %d)", snd, v, s.acct.per[snd], s.acct.byBucket[snd])
		}
	}
	for snd, v := range s.acct.per {
		if v < 0 {
			return fmt.Errorf("sender %s has a balance of %d", snd, v)
		}
	}
	return nil
}

// TestAccountingDriftUnderConcurrentFinishesAndReclaims extends
// TestAccountingDriftAcrossRestartsAndClockSteps with concurrency: callers
// of a few senders run many short-lived messages at once, with handlers
// that outlive them (the clock runs ahead meanwhile), so that the leader
// reclaims entries whose Finish is on its way, records them again (the
// Ticket's retry), abandons some, and the store is swept and reopened in
// between. Attack: a balance that reads below what its caller holds, even
// for one commit, lets a concurrent reservation of that caller pass its
// share (AGENT-23); one that drifts leaks or credits a share for good, and
// leaves a residue per caller in the accounts' maps. What should happen:
// at every moment each balance covers what the index holds; once the
// callers stop, the accounts are exactly the sum of the index; once
// everything has expired, nothing is left and no caller is named.
func TestAccountingDriftUnderConcurrentFinishesAndReclaims(t *testing.T) {
	for seed := int64(0); seed < 4; seed++ {
		c := newRestartClock()
		lim := Limits{Budget: 64 << 10, PerCaller: 24 << 10, ReplyReserve: MinReplyReserve}
		path := filepath.Join(t.TempDir(), "l.wal")
		s := c.openNoSync(t, path, lim)
		for round := range 3 {
			l, err := New(s, Options{Now: c.wall.Now})
			if err != nil {
				t.Fatal(err)
			}
			var stop atomic.Bool
			var bad atomic.Value
			var wg, bg sync.WaitGroup
			bg.Add(2)
			go func() { // the clocks run ahead of the handlers
				defer bg.Done()
				for !stop.Load() {
					c.tick(300*time.Millisecond, 300*time.Millisecond)
					time.Sleep(50 * time.Microsecond)
				}
			}()
			go func() { // every balance covers what is held, at every moment
				defer bg.Done()
				for !stop.Load() {
					if err := checkAccountsCover(s); err != nil {
						bad.CompareAndSwap(nil, err)
					}
					time.Sleep(20 * time.Microsecond)
				}
			}()
			for w := range 6 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					r := rand.New(rand.NewSource(seed*100 + int64(round)*10 + int64(w)))
					sender := fmt.Sprintf("did:key:z%d", w%3)
					for i := range 150 {
						msg := id(round*1_000_000 + w*10_000 + i)
						st, err := l.Start(sender, msg, c.wall.Now().Add(time.Duration(r.Intn(2000))*time.Millisecond))
						if err != nil {
							bad.CompareAndSwap(nil, err)
							return
						}
						if st.Ticket == nil {
							continue
						}
						st.Ticket.Reserve(int64(r.Intn(3000)))
						if err := st.Ticket.Running(); err != nil {
							st.Ticket.Abandon() // refused: the share is full
							continue
						}
						if r.Intn(4) == 0 {
							if _, err := s.Sweep(c.wall.Now(), r.Intn(4)); err != nil {
								bad.CompareAndSwap(nil, err)
							}
						}
						if r.Intn(5) == 0 {
							st.Ticket.Abandon()
						} else if err := st.Ticket.Finish(make([]byte, r.Intn(1000))); err != nil {
							st.Ticket.Abandon() // recorded again, refused: the share is full
						}
					}
				}()
			}
			wg.Wait()
			stop.Store(true)
			bg.Wait()
			if err, _ := bad.Load().(error); err != nil {
				t.Fatalf("seed %d round %d: %v", seed, round, err)
			}
			checkAccountsExact(t, s, fmt.Sprintf("seed %d round %d", seed, round))
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			c.stamp(t, path)
			c.tick(time.Duration(round)*time.Minute, time.Second) // a restart, the clock ahead
			s = c.openNoSync(t, path, lim)
			checkAccountsExact(t, s, fmt.Sprintf("seed %d open %d", seed, round))
		}
		c.tick(24*time.Hour, 24*time.Hour)
		if _, err := s.Sweep(c.wall.Now(), 0); err != nil {
			t.Fatal(err)
		}
		checkAccountsExact(t, s, fmt.Sprintf("seed %d end", seed))
		if u := s.Usage(); u.Entries != 0 || u.Bytes != 0 || len(s.acct.per) != 0 || len(s.acct.byBucket) != 0 {
			t.Fatalf("seed %d: usage %+v and %d callers named once everything expired and elapsed, want none", seed, u, len(s.acct.per))
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

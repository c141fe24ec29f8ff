package ledger

import (
	"fmt"
	"math/rand"
	"path/filepath"
	"testing"
	"time"
)

// indexHolds is what s's index holds (the caller holds s.idx): the
// charged entries' costs in total, their number and each sender's, and
// the set-aside ones' (AGENT-22) in total and their number.
func indexHolds(s *WALStore) (charged int64, nc int, per map[string]int64, spare int64, ns int) {
	per = map[string]int64{}
	for k, e := range s.m {
		c := e.cost(k)
		if e.spare {
			spare, ns = spare+c, ns+1
			continue
		}
		charged, nc = charged+c, nc+1
		per[k.Sender] += c
	}
	return charged, nc, per, spare, ns
}

// checkAccountsExact fails unless the write-ahead log's accounts are the
// sum of its index: the charged entries' costs in total, in entries and
// per sender, the set-aside ones (AGENT-22) in spareBytes and spareN.
func checkAccountsExact(t *testing.T, s *WALStore, step string) {
	t.Helper()
	s.idx.RLock()
	defer s.idx.RUnlock()
	charged, nc, per, spare, ns := indexHolds(s)
	s.acct.mu.Lock()
	defer s.acct.mu.Unlock()
	if charged != s.acct.total || nc != s.acct.entries || spare != s.spareBytes || ns != s.spareN {
		t.Fatalf("%s: the index charges %d bytes in %d entries and sets aside %d in %d; the accounts say %d in %d and %d in %d",
			step, charged, nc, spare, ns, s.acct.total, s.acct.entries, s.spareBytes, s.spareN)
	}
	for snd, v := range per {
		if s.acct.per[snd] != v || s.acct.byBucket[snd] != v {
			t.Fatalf("%s: sender %s holds %d bytes; its accounts say %d (principal %d)", step, snd, v, s.acct.per[snd], s.acct.byBucket[snd])
		}
	}
	if len(per) != len(s.acct.per) || len(per) != len(s.acct.byBucket) {
		t.Fatalf("%s: %d senders hold entries; the accounts name %d (%d principals)", step, len(per), len(s.acct.per), len(s.acct.byBucket))
	}
}

// TestAccountingDriftAcrossRestartsAndClockSteps: the accounts of the
// write-ahead log are changed on many paths (a reply's refund made when
// its record is applied, to an entry perhaps reclaimed meanwhile, entries
// set aside at open and then answered, finished as Lost, re-timed by a clock
// stepped back, reclaimed or evicted for room). Attack (many cycles of
// short-lived messages, slow handlers, abandoned tickets, restarts with
// the clock ahead or behind, sweeps at odd times): a counter that drifts
// from what the index holds either leaks a caller's share (refused for
// good, as the per-sender balance did when it was clamped at zero, AGENT-23)
// or lets one go past it. What should happen: after every step the
// accounts are exactly the sum of the index, and once everything has
// expired and elapsed nothing is left.
func TestAccountingDriftAcrossRestartsAndClockSteps(t *testing.T) {
	for seed := int64(0); seed < 30; seed++ {
		r := rand.New(rand.NewSource(seed))
		c := newRestartClock()
		lim := Limits{Budget: 24 << 10, PerCaller: 12 << 10, ReplyReserve: MinReplyReserve}
		path := filepath.Join(t.TempDir(), "l.wal")
		s := c.openNoSync(t, path, lim)
		l, err := New(s, Options{Now: c.wall.Now})
		if err != nil {
			t.Fatal(err)
		}
		tickets := map[Key]*Ticket{}
		for round := range 4 {
			for i := range 200 {
				k := Key{Sender: fmt.Sprintf("did:key:z%d", r.Intn(4)), ID: id(r.Intn(60))}
				switch r.Intn(8) {
				case 0, 1, 2:
					if tickets[k] != nil {
						continue
					}
					st, err := l.Start(k.Sender, k.ID, c.wall.Now().Add(time.Duration(r.Intn(300))*time.Second))
					if err != nil {
						t.Fatal(err)
					}
					if st.Ticket == nil {
						continue
					}
					if st.State == Fresh {
						if err := st.Ticket.Running(); err != nil {
							st.Ticket.Abandon()
							continue
						}
					}
					tickets[k] = st.Ticket
				case 3, 4:
					for kk, tk := range tickets {
						if r.Intn(3) == 0 {
							tk.Abandon()
						} else if err := tk.Finish(make([]byte, r.Intn(900))); err != nil {
							tk.Abandon()
						}
						delete(tickets, kk)
						break
					}
				case 5:
					c.tick(time.Duration(r.Intn(120)-40)*time.Second, time.Duration(r.Intn(60))*time.Second)
				case 6:
					if _, err := l.Sweep(c.wall.Now()); err != nil {
						t.Fatal(err)
					}
				case 7:
					if _, err := s.Sweep(c.wall.Now().Add(time.Duration(r.Intn(100)-50)*time.Second), r.Intn(5)); err != nil {
						t.Fatal(err)
					}
				}
				checkAccountsExact(t, s, fmt.Sprintf("seed %d round %d step %d", seed, round, i))
			}
			for _, tk := range tickets {
				tk.Abandon()
			}
			clear(tickets)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			c.stamp(t, path)
			c.tick(time.Duration(r.Intn(7200))*time.Second, time.Second) // a restart, the clock ahead by up to 2 h
			s = c.openNoSync(t, path, lim)
			if l, err = New(s, Options{Now: c.wall.Now}); err != nil {
				t.Fatal(err)
			}
			checkAccountsExact(t, s, fmt.Sprintf("seed %d open %d", seed, round))
			if r.Intn(2) == 0 {
				c.tick(-time.Duration(r.Intn(7200))*time.Second, time.Second) // corrected, or stepped further back
			}
		}
		c.tick(24*time.Hour, 24*time.Hour)
		if _, err := l.Sweep(c.wall.Now()); err != nil {
			t.Fatal(err)
		}
		checkAccountsExact(t, s, fmt.Sprintf("seed %d end", seed))
		if u := s.Usage(); u.Entries != 0 || u.Bytes != 0 {
			t.Fatalf("seed %d: usage %+v once everything expired and elapsed, want none", seed, u)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

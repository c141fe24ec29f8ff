package ledger

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
)

var t0 = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

type clock struct{ ns atomic.Int64 }

func newClock() *clock               { c := &clock{}; c.ns.Store(t0.UnixNano()); return c }
func (c *clock) Now() time.Time      { return time.Unix(0, c.ns.Load()).UTC() }
func (c *clock) Add(d time.Duration) { c.ns.Add(int64(d)) }

func id(n int) [16]byte {
	var b [16]byte
	copy(b[:], fmt.Sprintf("id-%013d", n))
	return b
}

// stores returns each Store implementation, fresh, with its reopen
// function (nil when it is not durable).
func stores(lim Limits) map[string]func(t *testing.T, c *clock) (Store, func() Store) {
	durable := func(file string, open func(path string, c *clock) (Store, error)) func(t *testing.T, c *clock) (Store, func() Store) {
		return func(t *testing.T, c *clock) (Store, func() Store) {
			path := filepath.Join(t.TempDir(), file)
			var cur Store
			reopen := func() Store {
				if cur != nil {
					cur.Close()
				}
				s, err := open(path, c)
				if err != nil {
					t.Fatal(err)
				}
				cur = s
				t.Cleanup(func() { s.Close() })
				return s
			}
			return reopen(), reopen
		}
	}
	return map[string]func(t *testing.T, c *clock) (Store, func() Store){
		"memory": func(*testing.T, *clock) (Store, func() Store) { return NewMemory(lim), nil },
		"wal": durable("registry.db.ledger.wal", func(path string, c *clock) (Store, error) {
			return OpenWAL(path, WALOptions{Limits: lim, Now: c.Now})
		}),
	}
}

// TestLedgerTransitions walks the state table of doc.go: each step is an
// event on one key and the state Start must report afterwards.
func TestLedgerTransitions(t *testing.T) {
	type step struct {
		do   string // start, running, finish, abandon, restart, expire
		want State  // for start: the reported state
	}
	cases := []struct {
		name  string
		steps []step
		reply string // the reply a final Done must carry
	}{
		{"fresh key is claimed", []step{{"start", Fresh}}, ""},
		{"concurrent copy waits", []step{{"start", Fresh}, {"start2", Busy}}, ""},
		{"finished after running is replayed", []step{{"start", Fresh}, {"running", 0}, {"finish", 0}, {"start", Done}}, "reply"},
		{"durable reply survives a restart", []step{{"start", Fresh}, {"running", 0}, {"finish", 0}, {"restart", 0}, {"start", Done}}, "reply"},
		{"refusal without running is replayed from memory", []step{{"start", Fresh}, {"finish", 0}, {"start", Done}}, "reply"},
		{"refusal without running is not durable", []step{{"start", Fresh}, {"finish", 0}, {"restart", 0}, {"start", Fresh}}, ""},
		{"abandoned key is fresh again", []step{{"start", Fresh}, {"abandon", 0}, {"start", Fresh}}, ""},
		{"running copy in this process is busy", []step{{"start", Fresh}, {"running", 0}, {"start2", Busy}}, ""},
		{"running without a ticket after a crash is lost", []step{{"start", Fresh}, {"running", 0}, {"restart", 0}, {"start", Lost}}, ""},
		{"abandoned after running is lost", []step{{"start", Fresh}, {"running", 0}, {"abandon", 0}, {"start", Lost}}, ""},
		{"lost finished is replayed after a restart", []step{{"start", Fresh}, {"running", 0}, {"restart", 0}, {"start", Lost}, {"finish", 0}, {"restart", 0}, {"start", Done}}, "reply"},
		{"expired entry is reclaimed", []step{{"start", Fresh}, {"running", 0}, {"finish", 0}, {"expire", 0}, {"start", Fresh}}, ""},
	}
	for _, tc := range cases {
		for sname, mk := range stores(Limits{}) {
			t.Run(tc.name+"/"+sname, func(t *testing.T) {
				c := newClock()
				store, reopen := mk(t, c)
				durable := reopen != nil
				l, err := New(store, Options{Now: c.Now})
				if err != nil {
					t.Fatal(err)
				}
				var ticket *Ticket
				var last Start
				for i, s := range tc.steps {
					switch s.do {
					case "start", "start2":
						got, err := l.Start("did:key:zA", id(1), c.Now().Add(time.Hour))
						if err != nil {
							t.Fatal(err)
						}
						want := s.want
						if got.State != want {
							t.Fatalf("step %d: Start = %s, want %s", i, got.State, want)
						}
						if s.do == "start" {
							ticket, last = got.Ticket, got
						}
						if (got.Ticket != nil) != (want == Fresh || want == Lost) || (got.Wait != nil) != (want == Busy) {
							t.Fatalf("step %d: %s with ticket %v, wait %v", i, got.State, got.Ticket != nil, got.Wait != nil)
						}
					case "running":
						if err := ticket.Running(); err != nil {
							t.Fatal(err)
						}
					case "finish":
						if err := ticket.Finish([]byte("reply")); err != nil {
							t.Fatal(err)
						}
					case "abandon":
						ticket.Abandon()
					case "restart":
						if !durable {
							t.Skip("memory store has no restart")
						}
						if l, err = New(reopen(), Options{Now: c.Now}); err != nil {
							t.Fatal(err)
						}
					case "expire":
						c.Add(2 * time.Hour)
						if n, err := l.Sweep(c.Now()); err != nil || n != 1 {
							t.Fatalf("sweep: %d %v", n, err)
						}
					}
				}
				if tc.reply != "" && string(last.Reply) != tc.reply {
					t.Fatalf("replayed %q, want %q", last.Reply, tc.reply)
				}
			})
		}
	}
}

// TestLedgerBusyWaitersSeeTheReply: concurrent copies of one message get
// one ticket between them; the rest wait and then replay its reply.
func TestLedgerBusyWaitersSeeTheReply(t *testing.T) {
	for sname, mk := range stores(Limits{}) {
		t.Run(sname, func(t *testing.T) {
			c := newClock()
			s, _ := mk(t, c)
			l, _ := New(s, Options{Now: c.Now})
			var runs atomic.Int32
			var wg sync.WaitGroup
			replies := make([][]byte, 32)
			for i := range replies {
				wg.Add(1)
				go func(i int) {
					defer wg.Done()
					for {
						st, err := l.Start("did:key:zA", id(7), c.Now().Add(time.Hour))
						if err != nil {
							t.Error(err)
							return
						}
						switch st.State {
						case Busy:
							<-st.Wait
							continue
						case Done:
							replies[i] = st.Reply
						case Fresh:
							runs.Add(1)
							st.Ticket.Running()
							st.Ticket.Finish([]byte("only"))
							replies[i] = []byte("only")
						}
						return
					}
				}(i)
			}
			wg.Wait()
			if runs.Load() != 1 {
				t.Fatalf("%d tickets for one key", runs.Load())
			}
			for i, r := range replies {
				if string(r) != "only" {
					t.Fatalf("copy %d got %q", i, r)
				}
			}
		})
	}
}

// TestLedgerFloodStaysWithinBudget: a stream of distinct senders and ids
// fills the ledger up to its budget and no further; the refusal is
// retryable; the per-caller share refuses one sender before the whole.
func TestLedgerFloodStaysWithinBudget(t *testing.T) {
	for sname, mk := range stores(Limits{Budget: 128 << 10, PerCaller: 16 << 10}) {
		t.Run(sname, func(t *testing.T) {
			c := newClock()
			store, _ := mk(t, c)
			l, _ := New(store, Options{Now: c.Now})
			full := 0
			for i := 0; i < 600; i++ {
				st, err := l.Start(fmt.Sprintf("did:key:z%06d", i), id(i), c.Now().Add(time.Hour))
				if err != nil {
					t.Fatal(err)
				}
				if err := st.Ticket.Running(); err != nil {
					if amp.NameOf(err) != ErrFull || !amp.CodeOf(err).Retryable() {
						t.Fatalf("refusal %v is not a retryable ledger_full", err)
					}
					st.Ticket.Abandon()
					full++
					continue
				}
				if err := st.Ticket.Finish(bytes.Repeat([]byte{1}, 200)); err != nil {
					t.Fatal(err)
				}
			}
			if u := store.Usage(); full == 0 || u.Bytes > u.Budget {
				t.Fatalf("%d refused, usage %+v", full, u)
			}
			if b, ok := store.(interface{ FileSize() int64 }); ok && b.FileSize() > 512<<10 {
				t.Fatalf("ledger file is %d bytes for a 128 KiB budget", b.FileSize())
			}
			// One sender alone hits its share first.
			var callerErr error
			for i := 0; callerErr == nil && i < 1000; i++ {
				st, _ := l.Start("did:key:zgreedy", id(100000+i), c.Now().Add(time.Hour))
				callerErr = st.Ticket.Running()
				if callerErr != nil {
					st.Ticket.Abandon()
				} else {
					st.Ticket.Finish([]byte("r"))
				}
			}
			// The global budget is already reached, so either refusal is
			// right here; with room left, the caller's share decides.
			if n := amp.NameOf(callerErr); n != ErrCallerFull && n != ErrFull {
				t.Fatalf("greedy caller: %v", callerErr)
			}
		})
	}
}

// TestLedgerPerCallerShare: with room in the budget, one sender is
// refused at its share and another sender still gets in; a durable store
// reopened still holds the sender to its share (threat: a restart handing
// every caller a fresh quota).
func TestLedgerPerCallerShare(t *testing.T) {
	for sname, mk := range stores(Limits{Budget: 1 << 20, PerCaller: 32 << 10}) {
		t.Run(sname, func(t *testing.T) {
			c := newClock()
			store, reopen := mk(t, c)
			l, _ := New(store, Options{Now: c.Now})
			var err error
			i := 0
			for ; err == nil && i < 1000; i++ {
				st, _ := l.Start("did:key:zgreedy", id(i), c.Now().Add(time.Hour))
				if err = st.Ticket.Running(); err != nil {
					st.Ticket.Abandon()
				} else {
					st.Ticket.Finish([]byte("r"))
				}
			}
			if amp.NameOf(err) != ErrCallerFull || !amp.CodeOf(err).Retryable() || i > 300 {
				t.Fatalf("after %d: %v", i, err)
			}
			st, _ := l.Start("did:key:zother", id(1), c.Now().Add(time.Hour))
			if err := st.Ticket.Running(); err != nil {
				t.Fatalf("another caller refused: %v", err)
			}
			st.Ticket.Finish([]byte("r"))
			if reopen == nil {
				return
			}
			l, _ = New(reopen(), Options{Now: c.Now})
			st, _ = l.Start("did:key:zgreedy", id(5000), c.Now().Add(time.Hour))
			if err := st.Ticket.Running(); amp.NameOf(err) != ErrCallerFull {
				t.Fatalf("after a restart the greedy caller got %v", err)
			}
			st.Ticket.Abandon()
		})
	}
}

// TestLedgerReclaimKeepsFileSizeSteady: under steady load with expiry, the
// file stops growing: the largest size in a second equal stretch of load
// is (almost) the largest of the first. The log is given a small slack
// so that it compacts within the test.
func TestLedgerReclaimKeepsFileSizeSteady(t *testing.T) {
	durable := map[string]func(t *testing.T, c *clock) (Store, int){
		"wal": func(t *testing.T, c *clock) (Store, int) {
			s, err := OpenWAL(filepath.Join(t.TempDir(), "l"), WALOptions{Now: c.Now, Slack: 128 << 10})
			if err != nil {
				t.Fatal(err)
			}
			return s, 3
		},
	}
	for sname, open := range durable {
		t.Run(sname, func(t *testing.T) {
			c := newClock()
			store, periods := open(t, c)
			defer store.Close()
			s := store.(interface{ FileSize() int64 })
			l, _ := New(store, Options{Now: c.Now})
			base := 0
			stretch := func() (largest int64) {
				for p := 0; p < periods; p++ {
					for i := 0; i < 400; i++ {
						c.Add(10 * time.Millisecond)
						st, _ := l.Start("did:key:zA", id(base), c.Now().Add(time.Second))
						base++
						st.Ticket.Running()
						st.Ticket.Finish(bytes.Repeat([]byte{2}, 300))
						largest = max(largest, s.FileSize())
					}
				}
				return largest
			}
			size1 := stretch()
			size2 := stretch()
			if size2 > size1+size1/10 {
				t.Fatalf("file grew from %d to %d under steady load", size1, size2)
			}
			if u := store.Usage(); u.Entries > 200 {
				t.Fatalf("%d entries live with a 1 s expiry at 100/s", u.Entries)
			}
		})
	}
}

// TestLedgerTicketEndsOnce: a ticket cannot be finished twice.
func TestLedgerTicketEndsOnce(t *testing.T) {
	c := newClock()
	l, _ := New(NewMemory(Limits{}), Options{Now: c.Now})
	st, _ := l.Start("did:key:zA", id(1), c.Now().Add(time.Hour))
	st.Ticket.Finish([]byte("a"))
	if err := st.Ticket.Finish([]byte("b")); amp.NameOf(err) != ErrTicketUsed {
		t.Fatalf("second finish: %v", err)
	}
	if err := st.Ticket.Running(); !errors.Is(err, amp.CodeInternalError) && amp.NameOf(err) != ErrTicketUsed {
		t.Fatalf("running after finish: %v", err)
	}
}

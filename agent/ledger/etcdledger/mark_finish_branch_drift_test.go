package etcdledger

import (
	"context"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ampbundle/ampbundle/agent/ledger"
	"github.com/ampbundle/ampbundle/agent/ledger/etcdledger/etcdtest"
	"github.com/ampbundle/ampbundle/amp"
)

// Attack: the branches of Running's entry transaction (ops.go makeEntry)
// and of Finish that the fleet tests never reach — a Finish with nothing
// running or a reply over its reservation, an entry or claim changed or
// gone under a Finish, a counter changed on every try, a remake whose
// claim goes between its tries or whose vanished entry's charge sits on
// another bucket's counter, a Running on an entry already there or a
// claim gone — drift silently when the code around them changes (issue
// 22 splits both functions): a refusal that changes its name lets a
// caller retry what it must not (or give up on what it may retry), and a
// charge left on the tally or a counter pins the principal's share or
// the node's budget until the bucket ends. Each case pins today's
// answer (name and words), what etcd holds after it and what the tally
// holds.
func TestMarkAndFinishRefusalsNeverDriftNorLeakCharge(t *testing.T) {
	c := etcdtest.Start(t, 1)
	const reserve = 8 << 10
	lim := ledger.Limits{Budget: 1 << 20, PerCaller: 1 << 18, ReplyReserve: reserve}
	reply := []byte("handler ran")
	type env struct {
		s       *Store
		k       ledger.Key
		exp     time.Time
		end     int64  // the bucket of the entry runEntry made
		counter string // its usage counter
		observe *atomic.Pointer[func(op string)]
	}
	ctx := func(t *testing.T) context.Context {
		cx, cancel := context.WithTimeout(context.Background(), etcdtest.Settle)
		t.Cleanup(cancel)
		return cx
	}
	del := func(t *testing.T, key string) {
		t.Helper()
		if r, err := c.Client().Delete(ctx(t), key); err != nil || r.Deleted != 1 {
			t.Fatalf("setup: delete %s: %v %v", key, r, err)
		}
	}
	get := func(t *testing.T, key string) (string, int64) {
		t.Helper()
		r, err := c.Client().Get(ctx(t), key)
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Kvs) == 0 {
			return "", 0
		}
		return string(r.Kvs[0].Value), r.Kvs[0].ModRevision
	}
	put := func(t *testing.T, key, v string) {
		t.Helper()
		if _, err := c.Client().Put(ctx(t), key, v); err != nil {
			t.Fatal(err)
		}
	}
	// putCounter writes a usage counter as a node does, under a lease (one
	// without a lease is no node's: refused and deleted, FLEET-33), the
	// first write granting it.
	var counterLease clientv3.LeaseID
	putCounter := func(t *testing.T, key, v string) {
		t.Helper()
		if counterLease == 0 {
			g, err := c.Client().Grant(ctx(t), 3600)
			if err != nil {
				t.Fatal(err)
			}
			counterLease = g.ID
		}
		if _, err := c.Client().Put(ctx(t), key, v, clientv3.WithLease(counterLease)); err != nil {
			t.Fatal(err)
		}
	}
	tally := func(s *Store) ledger.Usage {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.usage
	}
	running := func(s *Store, k ledger.Key) bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		_, ok := s.running[k]
		return ok
	}
	cases := []struct {
		name  string
		lim   ledger.Limits
		setup func(t *testing.T, e *env) // after the store opens; runEntry unless bare
		bare  bool                       // no runEntry: the case claims or not itself
		do    func(t *testing.T, e *env) error
		want  amp.ErrName // "" for success
		words string      // part of the refusal's message
		after func(t *testing.T, e *env)
	}{
		{
			name: "finish with nothing running", bare: true,
			do:   func(t *testing.T, e *env) error { return e.s.Finish(e.k, reply) },
			want: ledger.ErrTicketUsed, words: "ledger entry is not running here",
			after: func(t *testing.T, e *env) {
				if v, _ := get(t, keysOf(e.s.prefix, e.k).entry); v != "" {
					t.Fatal("an entry was written")
				}
			},
		},
		{
			name: "finish over the reservation",
			do: func(t *testing.T, e *env) error {
				return e.s.Finish(e.k, make([]byte, e.s.reserveOf(0)+1))
			},
			want: ledger.ErrReplyTooLarge, words: "larger than the idempotency ledger reserved",
			after: func(t *testing.T, e *env) {
				if !running(e.s, e.k) {
					t.Fatal("the running entry was forgotten")
				}
			},
		},
		{
			name: "finish after entry and claim went",
			setup: func(t *testing.T, e *env) {
				ks := keysOf(e.s.prefix, e.k)
				del(t, ks.claim)
				del(t, ks.entry)
			},
			do:   func(t *testing.T, e *env) error { return e.s.Finish(e.k, reply) },
			want: ledger.ErrTicketUsed, words: "ledger entry went missing (expired)",
			after: func(t *testing.T, e *env) {
				if running(e.s, e.k) {
					t.Fatal("the vanished entry is still running here")
				}
				if u := tally(e.s); u.Bytes != 0 || u.Entries != 0 {
					t.Fatalf("the vanished entry's charge stayed on the tally: %+v", u)
				}
				e.s.mu.Lock()
				ci, ok := e.s.claims[e.k]
				e.s.mu.Unlock()
				if ok && ci.entry != nil {
					t.Fatal("the claim still names the vanished entry")
				}
			},
		},
		{
			name:  "finish after the claim went",
			setup: func(t *testing.T, e *env) { del(t, keysOf(e.s.prefix, e.k).claim) },
			do:    func(t *testing.T, e *env) error { return e.s.Finish(e.k, reply) },
			want:  ErrClaimLost, words: "expired while its handler ran",
			after: func(t *testing.T, e *env) {
				if v, _ := get(t, keysOf(e.s.prefix, e.k).entry); v == "" || strings.Contains(v, string(reply)) {
					t.Fatal("the entry was not left running")
				}
				if !running(e.s, e.k) || tally(e.s).Entries != 1 {
					t.Fatalf("the running entry or its charge was given up: %+v", tally(e.s))
				}
			},
		},
		{
			name: "finish after the entry was written again",
			setup: func(t *testing.T, e *env) {
				key := keysOf(e.s.prefix, e.k).entry
				v, _ := get(t, key)
				put(t, key, v)
			},
			do:   func(t *testing.T, e *env) error { return e.s.Finish(e.k, reply) },
			want: ErrClaimLost, words: "expired while its handler ran",
			after: func(t *testing.T, e *env) {
				if _, rev := get(t, keysOf(e.s.prefix, e.k).claim); rev == 0 {
					t.Fatal("the claim was deleted")
				}
			},
		},
		{
			// FLEET-14: after 16 tries on a counter changed each time, the
			// reply is recorded and the counter left as it is.
			name: "finish on a counter that keeps changing",
			setup: func(t *testing.T, e *env) {
				putCounter(t, e.counter, strconv.Itoa(1<<16))
				var writes atomic.Int64
				f := func(op string) {
					if op == "finish" {
						putCounter(t, e.counter, strconv.FormatInt(1<<16+writes.Add(1), 10))
					}
				}
				e.observe.Store(&f)
			},
			do: func(t *testing.T, e *env) error { return e.s.Finish(e.k, reply) },
			after: func(t *testing.T, e *env) {
				e.observe.Store(nil)
				// One try on the guess, 15 that read the counter first,
				// the 17th without a refund: 32 calls, 32 writes.
				if v, _ := get(t, e.counter); v != strconv.Itoa(1<<16+32) {
					t.Fatalf("the counter holds %s, want the others' 32nd write: a refund came off it, or "+
						"the tries changed", v)
				}
				if u := tally(e.s); u.Bytes != entryCost(e.k, reserve) {
					t.Fatalf("tally %+v, want the whole reservation still charged", u)
				}
			},
		},
		{
			name: "remake whose claim goes before its transaction",
			setup: func(t *testing.T, e *env) {
				del(t, keysOf(e.s.prefix, e.k).entry)
				var once atomic.Bool
				f := func(op string) {
					if op == "finish" && once.CompareAndSwap(false, true) {
						del(t, keysOf(e.s.prefix, e.k).claim)
					}
				}
				e.observe.Store(&f)
			},
			do:   func(t *testing.T, e *env) error { return e.s.Finish(e.k, reply) },
			want: ErrClaimLost, words: "expired before its handler could start",
			after: func(t *testing.T, e *env) {
				e.observe.Store(nil)
				if v, _ := get(t, keysOf(e.s.prefix, e.k).entry); v != "" {
					t.Fatal("the entry was made again without its claim")
				}
				if !running(e.s, e.k) || tally(e.s).Bytes != entryCost(e.k, reserve) {
					t.Fatalf("running %v, tally %+v: want the vanished entry kept as it was",
						running(e.s, e.k), tally(e.s))
				}
			},
		},
		{
			// The vanished entry expired soon; the remake keeps a minute,
			// another bucket: its charge comes off the old counter.
			name: "remake whose vanished charge is on another bucket's counter",
			setup: func(t *testing.T, e *env) {
				del(t, keysOf(e.s.prefix, e.k).entry)
			},
			do: func(t *testing.T, e *env) error { return e.s.Finish(e.k, reply) },
			after: func(t *testing.T, e *env) {
				rec, found, err := e.s.Lookup(e.k)
				if err != nil || !found || string(rec.Reply) != string(reply) {
					t.Fatalf("reply not recorded: %+v %v %v", rec, found, err)
				}
				if v, rev := get(t, e.counter); rev != 0 {
					t.Fatalf("the vanished entry's counter holds %s: its charge was not taken off", v)
				}
				r, err := c.Client().Get(ctx(t), usagePrefix(e.s.prefix, hash16(e.s.principalOf(e.k.Sender))), clientv3.WithPrefix())
				if err != nil || len(r.Kvs) != 1 || string(r.Kvs[0].Key) == e.counter ||
					string(r.Kvs[0].Value) != itoa(entryCost(e.k, int64(len(reply)))) {
					t.Fatalf("counters %v (%v): want one, of the remade entry's bucket, holding its reply's cost", r, err)
				}
				if u := tally(e.s); u.Bytes != entryCost(e.k, int64(len(reply))) || u.Entries != 1 {
					t.Fatalf("tally %+v, want the recorded reply alone", u)
				}
			},
		},
		{
			name: "running on an entry already there", bare: true,
			setup: func(t *testing.T, e *env) {
				other := openStoreWithin(t, c, e.s.prefix, 2*time.Second, lim)
				runEntry(t, other, e.k, e.exp)
			},
			do:   func(t *testing.T, e *env) error { return e.s.MarkRunning(e.k, e.exp) },
			want: ledger.ErrTicketUsed, words: "ledger entry already exists",
			after: func(t *testing.T, e *env) {
				if running(e.s, e.k) || tally(e.s).Bytes != 0 {
					t.Fatalf("charged for another's entry: %+v", tally(e.s))
				}
			},
		},
		{
			// A bare claim (no room for the default reservation), its
			// Running on a smaller one after the claim went.
			name: "running after a bare claim went", bare: true,
			lim: ledger.Limits{Budget: 1 << 20, PerCaller: entryCost(ledger.Key{Sender: "did:example:drift"}, reserve) - 1, ReplyReserve: reserve},
			setup: func(t *testing.T, e *env) {
				if r, err := e.s.Claim(e.k, e.exp); err != nil || r.Found || r.Wait != nil {
					t.Fatalf("claim: %+v %v", r, err)
				}
				if v, _ := get(t, keysOf(e.s.prefix, e.k).entry); v != "" {
					t.Fatal("setup: the claim made the entry")
				}
				del(t, keysOf(e.s.prefix, e.k).claim)
			},
			do:   func(t *testing.T, e *env) error { return e.s.MarkRunningWithin(e.k, e.exp, ledger.MinReplyReserve) },
			want: ErrClaimLost, words: "expired before its handler could start",
			after: func(t *testing.T, e *env) {
				if v, _ := get(t, keysOf(e.s.prefix, e.k).entry); v != "" || running(e.s, e.k) || tally(e.s).Bytes != 0 {
					t.Fatalf("an entry was made or charged without its claim: %+v", tally(e.s))
				}
			},
		},
		{
			name: "running on counters that keep changing", bare: true,
			lim: ledger.Limits{Budget: 1 << 20, PerCaller: entryCost(ledger.Key{Sender: "did:example:drift"}, reserve) - 1, ReplyReserve: reserve},
			setup: func(t *testing.T, e *env) {
				if r, err := e.s.Claim(e.k, e.exp); err != nil || r.Found || r.Wait != nil {
					t.Fatalf("claim: %+v %v", r, err)
				}
				// Another writer of the principal's counters: once before
				// the first try (its guess is stale), then after every
				// etcd call of the Running.
				other := usageKey(e.s.prefix, hash16(e.s.principalOf(e.k.Sender)), 1)
				putCounter(t, other, "1")
				var writes atomic.Int64
				writes.Store(1)
				f := func(op string) {
					if op == "mark" {
						putCounter(t, other, strconv.FormatInt(writes.Add(1), 10))
					}
				}
				e.observe.Store(&f)
			},
			do:   func(t *testing.T, e *env) error { return e.s.MarkRunningWithin(e.k, e.exp, ledger.MinReplyReserve) },
			want: ErrContended, words: "contended for this caller; retry",
			after: func(t *testing.T, e *env) {
				e.observe.Store(nil)
				if v, _ := get(t, keysOf(e.s.prefix, e.k).entry); v != "" || running(e.s, e.k) || tally(e.s).Bytes != 0 {
					t.Fatalf("an entry was made or charged: %+v", tally(e.s))
				}
			},
		},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l := lim
			if tc.lim.Budget != 0 {
				l = tc.lim
			}
			e := &env{k: ledger.Key{Sender: "did:example:drift", ID: [16]byte{0x22, byte(i)}}, observe: &atomic.Pointer[func(string)]{}}
			e.exp = time.Now().Add(time.Hour)
			if strings.HasPrefix(tc.name, "remake whose vanished") {
				e.exp = time.Now().Add(10 * time.Second)
			}
			s, err := Open(Options{Endpoints: c.Endpoints(), Prefix: "/drift/" + strconv.Itoa(i) + "/", Now: time.Now,
				OpTimeout: 2 * time.Second, Limits: l, Observe: func(op string, _ time.Duration, _ error) {
					if f := e.observe.Load(); f != nil {
						(*f)(op)
					}
				}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			e.s = s
			if !tc.bare {
				e.end = runEntry(t, s, e.k, e.exp)
				e.counter = usageKey(s.prefix, hash16(s.principalOf(e.k.Sender)), e.end)
			}
			if tc.setup != nil {
				tc.setup(t, e)
			}
			err = tc.do(t, e)
			if amp.NameOf(err) != tc.want || tc.want == "" && err != nil || tc.want != "" && !strings.Contains(err.Error(), tc.words) {
				t.Fatalf("answered %v (%q), want %q (%q)", err, amp.NameOf(err), tc.want, tc.words)
			}
			if tc.after != nil {
				tc.after(t, e)
			}
		})
	}
}

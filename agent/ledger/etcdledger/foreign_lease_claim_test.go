package etcdledger

import (
	"context"
	"crypto/sha256"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ampbundle/ampbundle/agent/ledger"
	"github.com/ampbundle/ampbundle/agent/ledger/etcdledger/etcdtest"
)

// Attack: anyone with write access under the prefix (another fleet
// member with a bug, an operator's script, a compromised agent) puts a
// message's claim key under a lease of its own, granted for a year.
// FLEET-38 deletes a claim without a lease, but a claim under a lease
// was taken for a live node's: every copy of the message, on every node,
// waited on it (a watch, WaitPoll) and claimed again, Busy until that
// lease ended, a year later; each copy was answered 5003 when its
// deadline passed, and the key stayed in etcd. Every node's claims are
// under its session lease, which etcd grants for SessionTTL (10 s by
// default): a lease granted longer is no node's session. Now the copy
// looks the lease up once (LeaseTimeToLive), deletes the claim (while it
// is unchanged and still under that lease) and claims again at once:
// Fresh when no entry was made, Lost when a running entry is there
// (never a second run), Done when it is done (docs/SPEC-DECISIONS.md
// FLEET-40). A claim under a lease no longer than a session is still
// waited on and kept, its lease looked up once, not at every claim.
func TestClaimUnderALeaseLongerThanAnySessionIsRemovedNeverHoldsItsMessageBusy(t *testing.T) {
	c := etcdtest.Start(t, 1)
	cli := c.Client()
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), etcdtest.Settle)
	defer cancel()
	var leaseCalls atomic.Int64
	s, err := Open(Options{Endpoints: c.Endpoints(), Prefix: "/foreign-lease-claim/", Now: time.Now, WaitPoll: 50 * time.Millisecond,
		Limits: ledger.Limits{Budget: 1 << 20, PerCaller: 1 << 18},
		Observe: func(op string, _ time.Duration, _ error) {
			if op == "lease" {
				leaseCalls.Add(1)
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	exp := time.Now().Add(time.Hour)
	// A claim of another message first: this process's session lease and
	// the bucket's lease are granted before any lease call is counted.
	warm := ledger.Key{Sender: "did:example:foreign-lease-claim", ID: [16]byte{0x40, 0xff}}
	if r, err := s.Claim(warm, exp); err != nil || r.Wait != nil || r.Found {
		t.Fatalf("a first claim: %+v, %v", r, err)
	}
	s.Unclaim(warm)
	const year = 365 * 24 * 3600
	session := int64(DefaultSessionTTL / time.Second)
	for i, tc := range []struct {
		name    string
		ttl     int64 // the planted claim's lease
		entry   byte  // 0: none; else the entry's state
		want    string
		removed bool
	}{
		{"under a lease of a year, no entry", year, 0, "fresh", true},
		{"under a lease of a year, a running entry", year, stateRunning, "lost", true},
		{"under a lease of a year, a done entry", year, stateDone, "done", false},
		{"under a lease one second longer than two sessions", 2*session + 1, 0, "fresh", true},
		{"under a lease twice a session (a node whose SessionTTL is up to twice ours)", 2 * session, 0, "busy", false},
		{"under a lease as long as a session (a live node's)", session, 0, "busy", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := ledger.Key{Sender: "did:example:foreign-lease-claim", ID: [16]byte{0x40, byte(i)}}
			ks := keysOf(s.prefix, k)
			g, err := cli.Grant(ctx, tc.ttl)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := cli.Put(ctx, ks.claim, "0123456789abcdef.1", clientv3.WithLease(g.ID)); err != nil {
				t.Fatal(err)
			}
			if tc.entry != 0 {
				ph := sha256.Sum256([]byte(k.Sender))
				e := entry{state: tc.entry, expires: exp, reserve: 4096, end: bucketEnd(time.Now(), exp)}
				if tc.entry == stateDone {
					e.reply = []byte("ran once")
				}
				copy(e.principal[:], ph[:16])
				eg, err := cli.Grant(ctx, 3600)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := cli.Put(ctx, ks.entry, string(e.encode()), clientv3.WithLease(eg.ID)); err != nil {
					t.Fatal(err)
				}
				if tc.entry == stateDone { // version 2, as a Finish leaves it
					if _, err := cli.Put(ctx, ks.entry, string(e.encode()), clientv3.WithIgnoreLease()); err != nil {
						t.Fatal(err)
					}
				}
			}
			// A copy's claim loop, as the agent's: at most 20 claims.
			before := leaseCalls.Load()
			got, claims := "busy", 0
			for claims < 20 {
				claims++
				r, err := s.Claim(k, exp)
				if err != nil {
					t.Fatalf("claim %d: %v", claims, err)
				}
				if r.Wait == nil {
					got = "fresh"
					if r.Found {
						got = "lost"
						if r.Record.Reply != nil {
							got = "done"
						}
					}
					break
				}
				<-r.Wait
			}
			calls := leaseCalls.Load() - before
			r, err := cli.Get(ctx, ks.claim)
			if err != nil {
				t.Fatal(err)
			}
			planted := len(r.Kvs) == 1 && string(r.Kvs[0].Value) == "0123456789abcdef.1"
			if got != tc.want || planted == tc.removed {
				t.Fatalf("a claim key %s: the copy is %s after %d claims (want %s); the planted claim still there: %v (want %v)",
					tc.name, got, claims, tc.want, planted, !tc.removed)
			}
			// One look at the claim's lease, whatever the claims.
			if calls > 1 {
				t.Fatalf("a claim key %s: %d lease calls over %d claims, want at most 1: the lease is looked up at every claim", tc.name, calls, claims)
			}
			if got == "fresh" || got == "lost" {
				s.Unclaim(k)
			}
			if _, err := cli.Revoke(ctx, g.ID); err != nil {
				t.Fatal(err)
			}
		})
	}
}

package etcdledger

import (
	"context"
	"crypto/sha256"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ampbundle/ampbundle/agent/ledger"
	"github.com/ampbundle/ampbundle/agent/ledger/etcdledger/etcdtest"
)

// Attack: anyone with write access under the prefix (another fleet
// member with a bug, an operator's script, a compromised agent), or a
// tool that copies keys without their leases, leaves a message's claim
// key without a lease. Every node writes its claims under its session
// lease, so etcd deletes them with the node; nothing ever deletes this
// one. Before, every copy of the message, on every node, found the claim
// held by another and waited on it (a watch, WaitPoll), then claimed
// again, Busy for ever: the message could never be answered, and the
// key stayed in etcd for good. Now a claim without a lease is held by no
// node: the copy deletes it (while it is unchanged and still has no
// lease) and claims again at once: Fresh when no entry was made (nothing
// ran), Lost when a running entry is there (its handler may have run:
// never a second run), Done when it is done. A claim under a live lease
// is still waited on and kept.
func TestClaimKeyWithoutALeaseIsRemovedNeverHoldsItsMessageBusy(t *testing.T) {
	c := etcdtest.Start(t, 1)
	cli := c.Client()
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), etcdtest.Settle)
	defer cancel()
	s, err := Open(Options{Endpoints: c.Endpoints(), Prefix: "/leaseless-claim/", Now: time.Now, WaitPoll: 50 * time.Millisecond,
		Limits: ledger.Limits{Budget: 1 << 20, PerCaller: 1 << 18}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	exp := time.Now().Add(time.Hour)
	for i, tc := range []struct {
		name    string
		leased  bool // the claim under a live lease (a live node's)
		entry   byte // 0: none; else the entry's state
		want    string
		removed bool
	}{
		{"without a lease, no entry", false, 0, "fresh", true},
		{"without a lease, a running entry", false, stateRunning, "lost", true},
		{"without a lease, a done entry", false, stateDone, "done", false},
		{"under a live lease", true, 0, "busy", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := ledger.Key{Sender: "did:example:leaseless-claim", ID: [16]byte{0x37, byte(i)}}
			ks := keysOf(s.prefix, k)
			var opts []clientv3.OpOption
			if tc.leased { // as long as a session: a longer one is no node's (FLEET-40)
				g, err := cli.Grant(ctx, int64(DefaultSessionTTL/time.Second))
				if err != nil {
					t.Fatal(err)
				}
				opts = append(opts, clientv3.WithLease(g.ID))
			}
			if _, err := cli.Put(ctx, ks.claim, "0123456789abcdef.1", opts...); err != nil {
				t.Fatal(err)
			}
			if tc.entry != 0 {
				g, err := cli.Grant(ctx, 3600)
				if err != nil {
					t.Fatal(err)
				}
				ph := sha256.Sum256([]byte(k.Sender))
				e := entry{state: tc.entry, expires: exp, reserve: 4096, end: bucketEnd(time.Now(), exp)}
				if tc.entry == stateDone {
					e.reply = []byte("ran once")
				}
				copy(e.principal[:], ph[:16])
				if _, err := cli.Put(ctx, ks.entry, string(e.encode()), clientv3.WithLease(g.ID)); err != nil {
					t.Fatal(err)
				}
				if tc.entry == stateDone { // version 2, as a Finish leaves it
					if _, err := cli.Put(ctx, ks.entry, string(e.encode()), clientv3.WithIgnoreLease()); err != nil {
						t.Fatal(err)
					}
				}
			}
			// A copy's claim loop, as the agent's: at most 20 claims.
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
			g, err := cli.Get(ctx, ks.claim)
			if err != nil {
				t.Fatal(err)
			}
			planted := len(g.Kvs) == 1 && string(g.Kvs[0].Value) == "0123456789abcdef.1"
			if got != tc.want || planted == tc.removed {
				t.Fatalf("a claim key %s: the copy is %s after %d claims (want %s); the planted claim still there: %v (want %v)",
					tc.name, got, claims, tc.want, planted, !tc.removed)
			}
			if got == "fresh" || got == "lost" {
				s.Unclaim(k)
			}
		})
	}
}

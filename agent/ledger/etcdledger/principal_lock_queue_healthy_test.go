package etcdledger_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/agent/ledger"
	"github.com/ampbundle/ampbundle/agent/ledger/etcdledger"
	"github.com/ampbundle/ampbundle/agent/ledger/etcdledger/etcdtest"
	"github.com/ampbundle/ampbundle/amp"
)

// Threat: ordinary load refused as contention. 64 concurrent claims of one
// principal ("*", every caller the policy does not name) on a healthy
// cluster: each holds the principal's lock across its own Raft commit
// (same-principal transactions are never combined), so the 64th waits 63
// commits. FLEET-15 cuts that wait at the call's OpTimeout; with an
// OpTimeout that leaves room for the queue (10 s: 63 commits take well
// under that even on a loaded 2-core machine) none may be refused
// ledger_contended, so a regression that refuses within the queue (a
// deadline counted wrongly, a lock never released) fails here and not by
// chance of the machine's load. The slowest claim is logged.
func TestSixtyFourClaimsOfOnePrincipalNeverRefusedOnHealthyCluster(t *testing.T) {
	c := etcdtest.Start(t, 3)
	s, err := etcdledger.Open(etcdledger.Options{Endpoints: c.Endpoints(), Prefix: "/many/", Now: time.Now, OpTimeout: 10 * time.Second,
		Limits: ledger.Limits{Budget: 1 << 30, PerCaller: 1 << 28, ReplyReserve: 1024}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	s.SetPrincipal(func(string) string { return "*" })
	exp := time.Now().Add(time.Minute)
	// Warm the session and bucket leases.
	warm := ledger.Key{Sender: "did:example:warm", ID: [16]byte{0xee}}
	if _, err := s.Claim(warm, exp); err != nil {
		t.Fatal(err)
	}
	s.Unclaim(warm)
	const n = 64
	for round := 0; round < 3; round++ {
		var refused, other atomic.Int64
		var worst atomic.Int64
		releasedAt(n, func(i int) {
			began := time.Now()
			k := ledger.Key{Sender: fmt.Sprintf("did:example:h-%d", i), ID: [16]byte{0xf2, byte(round), byte(i)}}
			_, err := s.Claim(k, exp)
			for d, w := int64(time.Since(began)), worst.Load(); d > w && !worst.CompareAndSwap(w, d); w = worst.Load() {
			}
			switch {
			case err == nil:
				s.Unclaim(k)
			case amp.NameOf(err) == etcdledger.ErrContended:
				refused.Add(1)
			default:
				other.Add(1)
			}
		})
		t.Logf("round %d: %d of %d claims refused ledger_contended, %d other errors, slowest %v",
			round, refused.Load(), n, other.Load(), time.Duration(worst.Load()))
		if refused.Load() > 0 {
			t.Errorf("round %d: %d of %d concurrent claims of one principal refused on a healthy cluster", round, refused.Load(), n)
		}
	}
}

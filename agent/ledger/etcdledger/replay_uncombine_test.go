package etcdledger_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/agent/ledger"
	"github.com/ampbundle/ampbundle/agent/ledger/etcdledger/etcdtest"
)

// releasedAt runs f(i) for i < n in n goroutines released at once.
func releasedAt(n int, f func(i int)) {
	var ready, done sync.WaitGroup
	ready.Add(n)
	done.Add(n)
	for i := 0; i < n; i++ {
		go func() {
			defer done.Done()
			ready.Done()
			ready.Wait()
			f(i)
		}()
	}
	done.Wait()
}

// Attack: replay messages the fleet already answered (or send copies of
// messages another node still runs). Each copy's Claim compares false
// (Version(entry) >= 2, or the claim exists), and a combined transaction
// (FLEET-10) succeeds only when every member's comparisons hold: one such
// copy in a batch fails the whole batch, and every honest message in it is
// committed again alone. A trickle of cheap replays, each answered from
// etcd at no charge to the attacker's share, undoes the group commit for
// every caller of the node: one extra Raft commit of latency per honest
// message and one etcd transaction per message instead of one per batch.
// Before FLEET-16: 32 fresh claims and 32 replays at once take more etcd
// transactions than messages (every one alone, plus the failed combined
// attempts), while 32 fresh claims alone are combined. Now (FLEET-16): a member
// whose comparisons fail takes only itself out of the batch (each member
// a nested transaction of an unconditional combined one, its own Then or
// Else answered), so the batch still costs about one transaction.
func TestReplayedDoneMessagesNeverUncombineHonestClaims(t *testing.T) {
	c := etcdtest.Start(t, 3)
	s, txns := countingStore(t, c, "/poison/", ledger.Limits{})
	exp := time.Now().Add(time.Minute)
	const n = 32
	var done []ledger.Key
	for i := 0; i < n; i++ {
		done = append(done, ledger.Key{Sender: fmt.Sprintf("did:example:done-%d", i), ID: [16]byte{0xd0, byte(i)}})
	}
	runKeys(t, s, done, exp, false) // the attacker's answered messages

	fresh := func(tag string, i int) ledger.Key {
		return ledger.Key{Sender: fmt.Sprintf("did:example:%s-%d", tag, i), ID: [16]byte{0xf0, byte(i)}}
	}
	// Baseline: n honest claims at once, of n principals, are combined.
	before := txns.Load()
	releasedAt(n, func(i int) {
		if r, err := s.Claim(fresh("a", i), exp); err != nil || r.Found || r.Wait != nil {
			t.Errorf("fresh claim: %+v %v", r, err)
		}
	})
	alone := txns.Load() - before
	if alone >= n {
		t.Skipf("%d etcd transactions for %d concurrent fresh claims: the machine did not let them combine", alone, n)
	}
	// The same, with a replay of an answered message beside each.
	before = txns.Load()
	releasedAt(2*n, func(i int) {
		if i%2 == 1 {
			if r, err := s.Claim(done[i/2], exp); err != nil || !r.Found || r.Record.Reply == nil {
				t.Errorf("replay: %+v %v, want its recorded reply", r, err)
			}
			return
		}
		if r, err := s.Claim(fresh("b", i/2), exp); err != nil || r.Found || r.Wait != nil {
			t.Errorf("fresh claim: %+v %v", r, err)
		}
	})
	mixed := txns.Load() - before
	if mixed >= 2*n {
		t.Fatalf("%d honest claims beside %d replays took %d etcd transactions (%d without the replays): "+
			"each replay's failed comparison fails its whole combined transaction, and every honest message is committed again alone",
			n, n, mixed, alone)
	}
}

package etcdledger

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ampbundle/ampbundle/agent/ledger"
	"github.com/ampbundle/ampbundle/agent/ledger/etcdledger/etcdtest"
	"github.com/ampbundle/ampbundle/amp"
)

// Attack: anyone with write access under the prefix (an operator's
// script, a compromised agent), or a broken etcd, leaves a usage counter
// without a lease under a principal's prefix, holding that principal's
// whole share (within 2^48, so it decodes: FLEET-9). Every honest counter
// is written under its bucket's lease (docs/FORMAT.md, "Ledger on
// etcd"), and a refund keeps the lease it has, so no node ever writes a
// counter without one, and nothing ever deletes it. Before, the counter
// was summed as a charge: every new message of the principal (every
// unnamed caller shares "*") was refused 3005 caller_quota_exceeded, a
// refusal that blames the caller, for as long as the key lived: for
// ever. Now a counter without a lease is ledger_counter_corrupt (5002,
// retryable, a name the operator is alerted by), and the node deletes
// it (compared on its mod revision and on having no lease), so the
// sender's retry runs. A counter under a lease holding the same value (an
// honest charge over the share) is still refused 3005 and never deleted.
func TestUsageCounterWithoutALeaseIsRefusedAsCorruptAndRemoved(t *testing.T) {
	for _, tc := range []struct {
		name    string
		leased  bool
		want    amp.ErrName
		removed bool
	}{
		{"without a lease", false, ErrCounterCorrupt, true},
		{"under a lease", true, ledger.ErrCallerFull, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := etcdtest.Start(t, 1)
			const sender = "did:example:leaseless-counter"
			lim := ledger.Limits{Budget: 1 << 20, PerCaller: 1 << 18}
			s := openStoreWithin(t, c, "/leaseless-counter/", 2*time.Second, lim)
			exp := time.Now().Add(time.Hour)
			counter := usageKey(s.prefix, hash16(s.principalOf(sender)), bucketEnd(time.Now(), exp))
			ctx, cancel := context.WithTimeout(context.Background(), etcdtest.Settle)
			defer cancel()
			cli := c.Client()
			defer cli.Close()
			var opts []clientv3.OpOption
			if tc.leased {
				g, err := cli.Grant(ctx, 7200)
				if err != nil {
					t.Fatal(err)
				}
				opts = append(opts, clientv3.WithLease(g.ID))
			}
			if _, err := cli.Put(ctx, counter, itoa(lim.PerCaller), opts...); err != nil {
				t.Fatal(err)
			}
			l, err := ledger.New(s, ledger.Options{Now: time.Now})
			if err != nil {
				t.Fatal(err)
			}
			st, err := l.Start(sender, [16]byte{0x33, 1}, exp)
			if err != nil || st.State != ledger.Fresh {
				t.Fatalf("start: %v %v", st.State, err)
			}
			err = st.Ticket.Running()
			st.Ticket.Abandon()
			if amp.NameOf(err) != tc.want {
				t.Fatalf("Running with a counter %s holding the whole share: %v (%s), want %s",
					tc.name, err, amp.NameOf(err), tc.want)
			}
			present := func() bool {
				r, err := cli.Get(ctx, counter)
				if err != nil {
					t.Fatal(err)
				}
				return len(r.Kvs) == 1
			}
			if !tc.removed {
				if !present() {
					t.Fatal("a counter under a lease was deleted: the store deletes only counters no node wrote")
				}
				return
			}
			for deadline := time.Now().Add(etcdtest.Settle); present(); time.Sleep(20 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("the counter without a lease is still there after %v: the principal is refused for as long as it lives", etcdtest.Settle)
				}
			}
			st, err = l.Start(sender, [16]byte{0x33, 2}, exp)
			if err != nil || st.State != ledger.Fresh {
				t.Fatalf("retry: %v %v", st.State, err)
			}
			if err := st.Ticket.Running(); err != nil {
				t.Fatalf("the sender's next message, once the counter went: %v", err)
			}
			st.Ticket.Finish([]byte("ran"))
		})
	}
}

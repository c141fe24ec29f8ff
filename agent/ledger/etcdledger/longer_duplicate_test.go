package etcdledger_test

import (
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/agent/ledger"
	"github.com/ampbundle/ampbundle/agent/ledger/etcdledger/etcdtest"
	"github.com/ampbundle/ampbundle/amp"
)

// TestDuplicateValidBeyondTheEntrysLeaseIsRefused: a verified duplicate
// (the same id and ts re-signed with a longer ttl) is answered from the
// fleet's entry only while etcd keeps the entry at least as long as the
// duplicate is valid (its expiry bucket's lease); one valid beyond it is
// refused, retryable, and nothing answered from the entry. Threat: the
// entry went with the first copy's lease while the duplicate, still
// valid, could be replayed onto any node and run the handler again.
func TestDuplicateValidBeyondTheEntrysLeaseIsRefused(t *testing.T) {
	c := etcdtest.Start(t, 1)
	s := openStore(t, c, "/longer/", ledger.Limits{})
	l, err := ledger.New(s, ledger.Options{Now: time.Now})
	if err != nil {
		t.Fatal(err)
	}
	const sender = "did:example:a"
	// 100 ms into a second: its bucket (1 s granules for a minute's life)
	// ends at the next whole second.
	expires := time.Now().Add(time.Minute).Truncate(time.Second).Add(100 * time.Millisecond)
	st, err := l.Start(sender, [16]byte{7}, expires)
	if err != nil || st.State != ledger.Fresh {
		t.Fatalf("start: %v %v", st.State, err)
	}
	if err := st.Ticket.Running(); err != nil {
		t.Fatal(err)
	}
	if err := st.Ticket.Finish([]byte("reply")); err != nil {
		t.Fatal(err)
	}
	if same, err := l.Start(sender, [16]byte{7}, expires.Add(500*time.Millisecond)); err != nil || same.State != ledger.Done {
		t.Fatalf("a duplicate valid within the entry's bucket: %v %v, want done", same.State, err)
	}
	dup, err := l.Start(sender, [16]byte{7}, expires.Add(time.Hour))
	if amp.NameOf(err) != ledger.ErrCannotExtend || !amp.CodeOf(err).Retryable() || dup.Reply != nil {
		t.Fatalf("a duplicate valid an hour past the entry's lease: %v %q %v, want %s (retryable), nothing answered",
			dup.State, dup.Reply, err, ledger.ErrCannotExtend)
	}
}

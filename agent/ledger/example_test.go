package ledger_test

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/ampbundle/ampbundle/agent/ledger"
)

// Example walks one message through the ledger: claimed, marked running
// (durable) just before its handler runs, finished with its reply (durable)
// before the reply is sent; a duplicate then gets the same bytes.
func Example() {
	dir, _ := os.MkdirTemp("", "ledger")
	defer os.RemoveAll(dir)
	now := func() time.Time { return time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC) }
	// The default durable store: a write-ahead log beside the registry
	// file (registry.db.ledger.wal).
	store, kind, err := ledger.OpenFile(filepath.Join(dir, "registry.db"), ledger.FileOptions{Now: now})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("store:", kind)
	l, _ := ledger.New(store, ledger.Options{Now: now})
	defer l.Close()

	id := [16]byte{0x01}
	st, _ := l.Start("did:key:z6MkCaller", id, now().Add(time.Hour))
	fmt.Println("first copy:", st.State)
	if err := st.Ticket.Running(); err != nil { // durable before the handler runs
		fmt.Println(err)
		return
	}
	reply := []byte("signed CAP_RESULT bytes")
	if err := st.Ticket.Finish(reply); err != nil { // durable before the reply is sent
		fmt.Println(err)
		return
	}
	again, _ := l.Start("did:key:z6MkCaller", id, now().Add(time.Hour))
	fmt.Printf("duplicate: %s, %q\n", again.State, again.Reply)
	// Output:
	// store: wal
	// first copy: fresh
	// duplicate: done, "signed CAP_RESULT bytes"
}

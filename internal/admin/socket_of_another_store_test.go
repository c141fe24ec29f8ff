//go:build unix

package admin

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/resolver"
)

// TestCommandAboutOneStoreIsRefusedByAnotherStoresAgent
//
// Attack: a store sits in a folder others may write (a shared /tmp, a
// group folder) and its agent listens elsewhere (--admin-socket) or not
// yet. Another user puts at DB.admin.sock a link to a socket of an agent
// the operator runs for another store (say production's). Dial checks
// only the user who listens (ADMIN-1): the operator's own agent passes,
// and a command meant for the test store ('trust add' of a test key for
// '*', an import, a trust removal) ran in the production store.
//
// Now (docs/SPEC-DECISIONS.md ADMIN-8) a client dialled for a store
// names that store's file (device and inode) on every request, and an
// agent serving another refuses it, admin_socket with cause
// ErrOtherStore, before anything is done; DialStore reports it at once.
func TestCommandAboutOneStoreIsRefusedByAnotherStoresAgent(t *testing.T) {
	prod, prodSock, _ := serve(t)
	dir := t.TempDir()
	test, err := resolver.Open(filepath.Join(dir, "test.db"), resolver.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	testPath := test.Path()
	test.Close()
	planted := SocketPath(testPath)
	if err := os.Symlink(prodSock, planted); err != nil {
		t.Fatal(err)
	}
	linked := filepath.Join(dir, "linked.db")
	if err := os.Symlink(prod.Path(), linked); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name, sock, db string
		refused        bool
	}{
		{"a link to another store's agent", planted, testPath, true},
		{"the agent's own socket, another store named", prodSock, testPath, true},
		{"the agent's own store", prodSock, prod.Path(), false},
		{"the agent's own store by a link", planted, linked, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, _ := prod.TrustList()
			c, err := DialStore(tc.sock, tc.db)
			if !tc.refused {
				if err != nil {
					t.Fatalf("own store refused: %v", err)
				}
				c.Close()
				return
			}
			if err == nil {
				// What the command would do next, in the wrong store.
				err = c.TrustAdd("planted-"+tc.name, publisher(t), []string{"*"})
				c.Close()
			}
			if amp.NameOf(err) != "admin_socket" || !errors.Is(err, ErrOtherStore) {
				t.Fatalf("err = %v, want admin_socket caused by ErrOtherStore", err)
			}
			if after, _ := prod.TrustList(); len(after) != len(before) {
				t.Fatalf("the other store's trusted keys went from %d to %d", len(before), len(after))
			}
		})
	}
}

// TestRequestNamingAnotherStoreRunsNothing: the agent's refusal comes
// before any route, whatever the route: a change (trust add) named for
// another store file leaves the store as it was and answers the refusal
// (409, admin_socket); the answer names the agent's own store file.
func TestRequestNamingAnotherStoreRunsNothing(t *testing.T) {
	s, sock, c := serve(t)
	c.store = "1:2" // a file that is not the store's
	err := c.TrustAdd("planted", publisher(t), []string{"*"})
	if amp.NameOf(err) != "admin_socket" || !errors.Is(err, ErrOtherStore) {
		t.Fatalf("err = %v, want admin_socket caused by ErrOtherStore", err)
	}
	if keys, _ := s.TrustList(); len(keys) != 0 {
		t.Fatalf("the store trusts %d keys after a refused request", len(keys))
	}
	own, err := storeFileID(s.Path())
	if err != nil {
		t.Fatal(err)
	}
	d, _ := Dial(sock)
	defer d.Close()
	req, _ := http.NewRequest(http.MethodGet, "http://agent/v1/generation", nil)
	resp, err := d.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := resp.Header.Get(StoreFileHeader); got != own {
		t.Fatalf("answer names store file %q, want %q", got, own)
	}
}

//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/internal/admin"
)

// TestLinkToAnotherStoresAgentAtTheDefaultPathIsRefused: the test store
// sits in a folder others may write and its agent listens elsewhere;
// another user links DB.admin.sock to the operator's agent of another
// store (production). 'trust rm' on the test store went, through
// the link, into production (its key no longer trusted there), under a note that the store
// is held by a running agent (docs/SPEC-DECISIONS.md ADMIN-8). Now it is
// refused, admin_socket with a hint naming the socket and --admin-socket,
// production unchanged; with --admin-socket the test store's agent still
// serves.
func TestLinkToAnotherStoresAgentAtTheDefaultPathIsRefused(t *testing.T) {
	prod := newStore(t)
	prodStore := holdStore(t, prod, admin.SocketPath(prod))
	test := newStore(t)
	testSock := filepath.Join(t.TempDir(), "agent.sock")
	holdStore(t, test, testSock)
	if err := os.Symlink(admin.SocketPath(prod), admin.SocketPath(test)); err != nil {
		t.Fatal(err)
	}
	before, _ := prodStore.TrustList()

	r := failsWith(t, "admin_socket", "trust", "rm", "example", "--db", test)
	if after, _ := prodStore.TrustList(); len(after) != len(before) {
		t.Fatalf("production's trusted keys went from %d to %d", len(before), len(after))
	}
	if r = runCLI(t, nil, "ls", "--db", test); r.code != 1 || !strings.Contains(r.stderr, "another store") || !strings.Contains(r.stderr, "--admin-socket") {
		t.Fatalf("the refusal does not say what to do: exit %d\n%s", r.code, r.stderr)
	}
	if r := mustRun(t, "ls", "--db", test, "--admin-socket", testSock); !strings.Contains(r.stderr, viaAgent) {
		t.Fatalf("--admin-socket not used: %s", r.stderr)
	}
}

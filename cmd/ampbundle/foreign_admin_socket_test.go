//go:build linux

package main

import (
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/internal/admin"
)

// forgerEnv makes the test binary, re-run as another user, serve a
// forged admin socket at the path it names (TestForgedAdminSocketHelper).
const forgerEnv = "AMPBUNDLE_TEST_FORGED_ADMIN_SOCKET"

// TestForgedAdminSocketHelper is not a test: re-run as another user with
// forgerEnv set, it answers every admin request 200 with an empty list
// until killed.
func TestForgedAdminSocketHelper(t *testing.T) {
	path := os.Getenv(forgerEnv)
	if path == "" {
		t.Skip("helper of TestAnotherUsersSocketAtTheDefaultPathIsNamedNotUsed")
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		os.Exit(3)
	}
	os.Chmod(path, 0o777)
	http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set(admin.GenerationHeader, "7")
		io.WriteString(w, `[]`)
	}))
	os.Exit(0)
}

// TestAnotherUsersSocketAtTheDefaultPathIsNamedNotUsed: the store sits in
// a folder others may write and its agent listens elsewhere; another user
// listens at DB.admin.sock. ampbundle used that socket as the agent's
// (docs/SPEC-DECISIONS.md ADMIN-1): now it refuses it, admin_socket with
// a hint saying whose it is and what to do, not store_in_use (which sends
// the operator looking for another command); with --admin-socket the
// agent's socket still serves.
func TestAnotherUsersSocketAtTheDefaultPathIsNamedNotUsed(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to run the forger as another user")
	}
	db := storeWithSamples(t)
	sock := filepath.Join(t.TempDir(), "agent.sock")
	holdStore(t, db, sock)
	startForger(t, filepath.Dir(db), admin.SocketPath(db))

	failsWith(t, "admin_socket", "ls", "--db", db)
	r := runCLI(t, nil, "ls", "--db", db)
	if r.code != 1 || !strings.Contains(r.stderr, "another user") || !strings.Contains(r.stderr, "--admin-socket") {
		t.Fatalf("the refusal does not say whose socket it is and what to do: exit %d\n%s", r.code, r.stderr)
	}
	if r := mustRun(t, "ls", "--db", db, "--admin-socket", sock); !strings.Contains(r.stderr, viaAgent) {
		t.Fatalf("--admin-socket not used: %s", r.stderr)
	}
}

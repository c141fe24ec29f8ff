//go:build linux

package main

import (
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

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
	const nobody = 65534
	db := storeWithSamples(t)
	dir := filepath.Dir(db)
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o1777); err != nil {
			t.Fatal(err)
		}
	}
	sock := filepath.Join(t.TempDir(), "agent.sock")
	holdStore(t, db, sock)

	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "forger")
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	forged := admin.SocketPath(db)
	cmd := exec.Command(bin, "-test.run=^TestForgedAdminSocketHelper$")
	cmd.Env = append(os.Environ(), forgerEnv+"="+forged)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	for deadline := time.Now().Add(5 * time.Second); ; {
		if st, err := os.Lstat(forged); err == nil && st.Mode()&os.ModeSocket != 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the forger did not start")
		}
		time.Sleep(10 * time.Millisecond)
	}

	failsWith(t, "admin_socket", "ls", "--db", db)
	r := runCLI(t, nil, "ls", "--db", db)
	if r.code != 1 || !strings.Contains(r.stderr, "another user") || !strings.Contains(r.stderr, "--admin-socket") {
		t.Fatalf("the refusal does not say whose socket it is and what to do: exit %d\n%s", r.code, r.stderr)
	}
	if r := mustRun(t, "ls", "--db", db, "--admin-socket", sock); !strings.Contains(r.stderr, viaAgent) {
		t.Fatalf("--admin-socket not used: %s", r.stderr)
	}
}

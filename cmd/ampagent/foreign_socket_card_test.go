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
	"github.com/ampbundle/ampbundle/resolver"
)

// cardForgerEnv makes the test binary, re-run as another user,
// serve a forged admin socket at the path it names
// (TestForgedAdminSocketHelper).
const cardForgerEnv = "AMPAGENT_TEST_FORGED_ADMIN_SOCKET"

// TestForgedAdminSocketHelper is not a test: re-run as another
// user with cardForgerEnv set, it answers every admin request 200
// with an empty catalog until killed.
func TestForgedAdminSocketHelper(t *testing.T) {
	path := os.Getenv(cardForgerEnv)
	if path == "" {
		t.Skip("helper of TestCardNamesAnotherUsersSocket")
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		os.Exit(3)
	}
	os.Chmod(path, 0o777)
	http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set(admin.GenerationHeader, "7")
		io.WriteString(w, `{"generation":7,"entries":[],"aliases":{}}`)
	}))
	os.Exit(0)
}

// TestCardNamesAnotherUsersSocket
//
// Attack: the store sits in a folder others may write and its agent
// listens elsewhere (or not yet); another user listens at
// DB.admin.sock. The client refuses that socket (ADMIN-1), but 'ampagent
// card' drops Dial's refusal and answers the store's own store_in_use:
// the operator, told a running agent holds the store, goes looking for
// it and is never told that a foreign socket sits where the agent's
// should be (and stays there for the next command to meet).
//
// Was: store_in_use. Now (docs/SPEC-DECISIONS.md ADMIN-1): admin_socket
// with the hint naming the other user's socket and what to do
// (admin.ForeignSocketHint: --admin-socket, remove it), as ampbundle's
// commands answer.
func TestCardNamesAnotherUsersSocket(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to run the forger as another user")
	}
	const nobody = 65534
	db := cardStore(t, true)
	dir := filepath.Dir(db)
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o1777); err != nil {
			t.Fatal(err)
		}
	}
	held, err := resolver.Open(db, resolver.Options{Now: testNow})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { held.Close() })

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
	cmd.Env = append(os.Environ(), cardForgerEnv+"="+forged)
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

	r := runCLI(t, "", "card", "--db", db, "--json")
	if code, _ := errorDoc(t, r); r.code != 1 || code != "admin_socket" {
		t.Fatalf("card over a held store whose default socket is another user's: exit %d, %s; want admin_socket", r.code, r.stdout)
	}
	r = runCLI(t, "", "card", "--db", db)
	if !strings.Contains(r.stderr, "another user") || !strings.Contains(r.stderr, "--admin-socket") {
		t.Fatalf("the refusal does not say whose socket it is and what to do: exit %d\n%s", r.code, r.stderr)
	}
}

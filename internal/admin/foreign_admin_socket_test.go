//go:build linux

package admin

import (
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
)

// foreignAgentEnv makes the test binary, re-run as another user, serve a
// forged admin socket at the path it names
// (TestForeignAgentHelper).
const foreignAgentEnv = "AMPBUNDLE_TEST_FOREIGN_ADMIN_SOCKET"

// forgedKey is the key the forged socket answers trust ls with.
const forgedKey = "did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK"

// TestForeignAgentHelper is not a test: re-run as another user
// with foreignAgentEnv set, it serves a forged admin API (every trusted
// key the attacker's, every answer 200) on that socket until killed.
func TestForeignAgentHelper(t *testing.T) {
	path := os.Getenv(foreignAgentEnv)
	if path == "" {
		t.Skip("helper of TestClientRefusesAnotherUsersAdminSocket")
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		os.Exit(3)
	}
	os.Chmod(path, 0o777)
	http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set(GenerationHeader, "7")
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/v1/trust":
			io.WriteString(w, `[{"name":"acme","key":"`+forgedKey+`","scopes":["*"],"added_at":"2026-01-01T00:00:00Z"}]`)
		default:
			io.WriteString(w, `{}`)
		}
	}))
	os.Exit(0)
}

// sharedDirWithBinary makes a folder anyone may write and walk to, as
// /tmp is, and copies the test binary into it as name, where another
// user (or a user namespace's) may run it.
func sharedDirWithBinary(t *testing.T, name string) (dir, bin string) {
	t.Helper()
	dir = t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o1777); err != nil {
			t.Fatal(err)
		}
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	bin = filepath.Join(dir, name)
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir, bin
}

// TestClientRefusesAnotherUsersAdminSocket
//
// Attack: the store sits in a folder others may write (a shared /tmp,
// a group folder) and its agent listens elsewhere (--admin-socket), or
// not yet; another user creates DB.admin.sock first. ampbundle, finding
// the store held, dials that path and runs the operator's command
// through it: the bundles, trust policies and statements go to the
// other user, and its forged answers (trust ls listing its own key for
// "*", imports said done, a clean check) are printed as the store's.
// The server refuses any peer not of its own user (SO_PEERCRED); the
// client checked nothing.
//
// Was: Dial and TrustList succeeded, the forged key was listed (and an
// agent starting at that path was told "another agent already listens").
// Now (docs/SPEC-DECISIONS.md ADMIN-1): the client refuses (admin_socket,
// ErrForeignSocket) every connection whose server is not of its own
// user, at Dial and at each later connection, before it sends a byte;
// Listen names the other user's socket by the same cause.
func TestClientRefusesAnotherUsersAdminSocket(t *testing.T) {
	sock := startForger(t)

	// The agent starting there is told whose socket holds its path.
	if _, err := Listen(sock); amp.NameOf(err) != "admin_socket" || !errors.Is(err, ErrForeignSocket) {
		t.Fatalf("Listen where another user's socket answers: %v, want admin_socket (ErrForeignSocket)", err)
	}

	// Dialled where another user's socket is: refused before a request.
	if _, err := Dial(sock); amp.NameOf(err) != "admin_socket" || !errors.Is(err, ErrForeignSocket) {
		t.Fatalf("Dial of another user's socket: %v, want admin_socket (ErrForeignSocket)", err)
	}

	// Replaced after Dial (the agent's socket removed, another user's
	// put in its place): every later connection is checked too.
	_, own, c := serve(t)
	if _, err := c.TrustList(); err != nil {
		t.Fatal(err)
	}
	c.Close() // its idle connection to the agent goes
	if err := os.Rename(sock, own); err != nil {
		t.Fatal(err)
	}
	keys, err := c.TrustList()
	if err == nil {
		t.Fatalf("another user's socket was trusted: trust ls lists %d keys (the forger's own for %v)", len(keys), keys[0].Scopes)
	}
	if amp.NameOf(err) != "admin_socket" || !errors.Is(err, ErrForeignSocket) {
		t.Fatalf("trust ls through another user's socket: %v, want admin_socket (ErrForeignSocket)", err)
	}
}

// startForger runs the forged agent (TestForeignAgentHelper) as nobody
// in a folder anyone may write, and returns its socket once it listens;
// the test is skipped unless it runs as root.
func startForger(t *testing.T) (sock string) {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skip("needs root to run the forged agent as another user")
	}
	const nobody = 65534
	dir, bin := sharedDirWithBinary(t, "forger")
	sock = filepath.Join(dir, "store.db.admin.sock")
	cmd := exec.Command(bin, "-test.run=^TestForeignAgentHelper$")
	cmd.Env = append(os.Environ(), foreignAgentEnv+"="+sock)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	// Ready once it accepts a connection, not once its file exists: the
	// file is there from bind(2), before listen(2), and a socket that
	// refuses connections is one Listen takes for stale and replaces.
	for deadline := time.Now().Add(5 * time.Second); ; {
		if c, err := net.DialTimeout("unix", sock, time.Second); err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the forged agent did not start")
		}
		time.Sleep(10 * time.Millisecond)
	}
	return sock
}

//go:build linux

package admin

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
)

// overflowDialEnv makes the test binary, re-run in a user namespace as
// its uid 65534, dial the admin socket at the path it names
// (TestOverflowDialHelper).
const overflowDialEnv = "AMPBUNDLE_TEST_OVERFLOW_DIAL"

// TestOverflowDialHelper is not a test: re-run with
// overflowDialEnv set, it dials that socket and exits 0 when Dial
// accepts it, 10 when Dial refuses it (admin_socket), 11 otherwise.
func TestOverflowDialHelper(t *testing.T) {
	path := os.Getenv(overflowDialEnv)
	if path == "" {
		t.Skip("helper of TestUnmappedUserIsNotThisUser")
	}
	c, err := Dial(path)
	if err == nil {
		fmt.Printf("accepted as uid %d\n", os.Getuid())
		c.Close()
		os.Exit(0)
	}
	fmt.Println(err)
	if amp.NameOf(err) == "admin_socket" {
		os.Exit(10)
	}
	os.Exit(11)
}

// TestUnmappedUserIsNotThisUser
//
// Attack: the client runs in a user namespace (a rootless container, a
// sandbox) as its nobody, uid 65534, and the store sits in a folder
// shared with the host that others may write. Another user outside the
// namespace plants a socket at DB.admin.sock. Linux reports a peer whose
// uid the reader's namespace does not map as the overflow uid
// (/proc/sys/kernel/overflowuid, 65534): SO_PEERCRED says the socket is
// served by uid 65534, the client's own, and ADMIN-1's check lets every
// unmapped user, root of the host included, pass as this one; the
// operator's bundles and trust changes go to it and its forged answers
// are printed as the store's.
//
// Was: Dial accepted the planted socket. Now (docs/SPEC-DECISIONS.md
// ADMIN-1): a peer reported as the overflow uid outside the initial user
// namespace names no one: refused as a peer the system cannot tell
// (admin_socket), and the server refuses it as such too.
func TestUnmappedUserIsNotThisUser(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to map a user namespace")
	}
	dir, bin := sharedDirWithBinary(t, "client")
	// The planted socket, served by this process: root of the host, a
	// user the namespace below does not map.
	sock := filepath.Join(dir, "store.db.admin.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(sock, 0o777); err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		io.WriteString(w, `[]`)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })

	const inside, host = 65534, 40101 // the client's uid and gid in the namespace, and on the host
	cmd := exec.Command(bin, "-test.run=^TestOverflowDialHelper$")
	cmd.Env = append(os.Environ(), overflowDialEnv+"="+sock)
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: inside, HostID: host, Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: inside, HostID: host, Size: 1}},
		Credential:  &syscall.Credential{Uid: inside, Gid: inside, NoSetGroups: true},
	}
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err == nil:
		t.Fatalf("a socket of a user the namespace does not map was taken as this user's: %s", out)
	case errors.As(err, &exit) && exit.ExitCode() == 10:
		// refused: admin_socket
	default:
		t.Fatalf("the client in a user namespace: %v\n%s", err, out)
	}
}

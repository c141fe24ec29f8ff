//go:build linux

package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/internal/admin"
	"github.com/ampbundle/ampbundle/internal/cliutil"
)

// startForger runs the forged admin socket (TestForgedAdminSocketHelper)
// as the user nobody at path, the test binary copied into dir (a folder
// anyone may write and walk to, as /tmp is), until the test ends.
func startForger(t *testing.T, dir, path string) {
	t.Helper()
	const nobody = 65534
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
	bin := filepath.Join(dir, "forger")
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run=^TestForgedAdminSocketHelper$")
	cmd.Env = append(os.Environ(), forgerEnv+"="+path)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	for deadline := time.Now().Add(5 * time.Second); ; {
		if st, err := os.Lstat(path); err == nil && st.Mode()&os.ModeSocket != 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the forger did not start")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestMirrorNamesAnotherUsersSocket
//
// Attack: the store sits in a folder others may write and its agent
// listens elsewhere (--admin-socket not given to 'ampbundle serve');
// another user listens at DB.admin.sock. The client refuses that socket
// (ADMIN-1), but 'ampbundle serve' reads the store at every snapshot
// through mirrorOpener, which drops Dial's refusal and answers the
// store's own store_in_use: the operator, told another command holds the
// store, waits for it for ever, never told that a foreign socket sits
// where the agent's should be.
//
// Was: store_in_use. Now (docs/SPEC-DECISIONS.md ADMIN-1): admin_socket
// (ErrForeignSocket) with the hint (admin.ForeignSocketHint), as every
// other command over a held store answers (openStoreAt).
func TestMirrorNamesAnotherUsersSocket(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to run the forger as another user")
	}
	db := storeWithSamples(t)
	holdStore(t, db, filepath.Join(t.TempDir(), "agent.sock"))
	startForger(t, filepath.Dir(db), admin.SocketPath(db))

	env := &cliutil.Env{Stdout: io.Discard, Stderr: io.Discard, Now: func() time.Time { return cliNow }}
	_, err := mirrorOpener(env, db, "")()
	if amp.NameOf(err) != "admin_socket" || !errors.Is(err, admin.ErrForeignSocket) {
		t.Fatalf("serve over a held store whose default socket is another user's: %v (%s), want admin_socket (ErrForeignSocket)", err, amp.NameOf(err))
	}
	// The hint (cliutil.WithHint) says what to do: give the agent's
	// socket, and remove that one.
	if hint := fmt.Sprintf("%#v", err); !strings.Contains(hint, "--admin-socket") {
		t.Fatalf("the refusal carries no hint: %s", hint)
	}
}

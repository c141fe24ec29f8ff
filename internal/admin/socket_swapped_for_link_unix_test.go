//go:build unix

package admin

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
)

// TestAdminSocketSwappedForALinkIsNeverFollowed
//
// Attack: the agent's admin socket goes in a folder another user may
// write (a group folder without the sticky bit, where the store lies).
// Listen created the socket, then made sure of its mode with
// os.Chmod(path, 0600), which follows a link: that user, renaming the
// new socket away and putting a link to any file at its path between the
// two, had the agent (root, as a service often runs) chmod that file
// 0600 (a system file no other account could read any more, a setuid
// program that lost its bit), and the agent served a socket at a path it
// no longer named.
//
// Now (docs/SPEC-DECISIONS.md ADMIN-7) the socket is created 0600 (its
// umask) and only examined (lstat, no link followed): anything at the
// path but a socket only its owner may use refuses the start
// (admin_socket), and nothing is changed through the path.
func TestAdminSocketSwappedForALinkIsNeverFollowed(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("a file of the system"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(victim, 0o644); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "store.db.admin.sock")
	afterBind := func(path string) {
		// The other user's move, between the socket's creation and
		// its check.
		if err := os.Rename(path, path+".moved"); err != nil {
			t.Error(err)
		}
		if err := os.Symlink(victim, path); err != nil {
			t.Error(err)
		}
	}
	ln, err := listen(sock, afterBind)
	if err == nil {
		ln.Close()
	}
	if st, serr := os.Stat(victim); serr != nil || st.Mode().Perm() != 0o644 {
		t.Fatalf("the file a link at the socket path leads to was changed: %v %v", st.Mode(), serr)
	}
	if amp.NameOf(err) != "admin_socket" {
		t.Fatalf("a start whose socket path became a link: %v, want admin_socket", err)
	}
}

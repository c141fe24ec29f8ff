//go:build unix

package ocitransport_test

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/ampbundle/ampbundle/ocitransport"
)

// lockHelperEnv names the layout the helper process pushes to.
const lockHelperEnv = "AMP_TEST_SHARED_LOCK_LAYOUT"

// TestLockHelperPushesAsAnotherUser is the second user's push
// of TestSharedLayoutLockFileOfOneWriterLocksOutAnotherUser; it does
// nothing unless that test starts it.
func TestLockHelperPushesAsAnotherUser(t *testing.T) {
	dir := os.Getenv(lockHelperEnv)
	if dir == "" {
		return
	}
	w, err := ocitransport.Open(context.Background(), ocitransport.Location{Kind: ocitransport.KindLayout, Path: dir}, ocitransport.Options{}, ocitransport.ReadWrite)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	defer w.Close()
	f, err := os.Open(filepath.Join(dir, "..", "translate.ampb"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := w.PushBundle(context.Background(), f, "translate.ampb", "v2"); err != nil {
		t.Fatalf("push as another user: %v", err)
	}
}

// TestSharedLayoutLockFileOfOneWriterLocksOutAnotherUser: a layout folder
// shared by two users (every folder writable by both, as index.json's
// replace by rename allows) must stay writable by both. The lock file
// the first writer creates (0644, its own) is opened O_RDWR by the next
// writer, which another user cannot: every later push of the second user
// fails with oci_layout_error, for good, although flock needs no write
// access (an O_RDONLY descriptor takes LOCK_EX).
func TestSharedLayoutLockFileOfOneWriterLocksOutAnotherUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("this test runs the second writer as uid 65534 and needs root (CI runs as root)")
	}
	shared := t.TempDir()
	dir := filepath.Join(shared, "layout")
	w := mustOpen(t, "oci-layout:"+dir, ocitransport.Options{}, ocitransport.ReadWrite)
	// The operator makes the folder shared before anyone pushes.
	chmodTree(t, shared, 0o777)
	copyFile(t, sampleBundle, filepath.Join(shared, "translate.ampb"), 0o644)
	bin := filepath.Join(shared, "ocitransport.test")
	copyFile(t, os.Args[0], bin, 0o755)
	if err := os.Chmod(filepath.Dir(shared), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(sampleBundle)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := w.PushBundle(context.Background(), f, "translate.ampb", "v1"); err != nil {
		t.Fatal(err)
	}
	w.Close()
	lockInfo, err := os.Stat(filepath.Join(dir, ocitransport.LayoutLockFile))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run=^TestLockHelperPushesAsAnotherUser$", "-test.count=1")
	cmd.Dir = shared
	cmd.Env = append(os.Environ(), lockHelperEnv+"="+dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the second user of a shared layout cannot push (lock file %s left by the first writer, mode %v): %v\n%s",
			ocitransport.LayoutLockFile, lockInfo.Mode(), err, firstLines(string(out), 6))
	}
}

// chmodTree sets mode on root and every folder and file under it.
func chmodTree(t *testing.T, root string, mode os.FileMode) {
	t.Helper()
	err := filepath.Walk(root, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Chmod(p, mode)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// copyFile copies src to dst with mode.
func copyFile(t *testing.T, src, dst string, mode os.FileMode) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// firstLines is at most n lines of s.
func firstLines(s string, n int) string {
	l := strings.SplitN(s, "\n", n+1)
	if len(l) > n {
		l = l[:n]
	}
	return strings.Join(l, "\n")
}

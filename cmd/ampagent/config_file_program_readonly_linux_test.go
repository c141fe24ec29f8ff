package main

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// mountTmpfs mounts a tmpfs of mode 0777 at a new folder under base and
// returns it; mounting needs root (CAP_SYS_ADMIN), as the root-only rows
// of TestHandlerProgramAnotherUserMayWriteIsRefused need root.
func mountTmpfs(t *testing.T, base, name string) string {
	t.Helper()
	dir := filepath.Join(base, name)
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "mode=0777,size=1m"); err != nil {
		if errors.Is(err, unix.EPERM) {
			t.Skip("mounting a file system needs root (CAP_SYS_ADMIN)")
		}
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
	return dir
}

// TestHandlerProgramOnAReadOnlyFileSystemRuns: a program shipped on a file
// system whose superblock is read-only (an image's squashfs or erofs, a
// read-only root) sits in folders whose modes may say 0777; no one but
// root can write there, through any path, so the mode is not judged
// there, the owner still is (CLI-70 amended; threat: the refusal of
// programs others may write turning away an honest read-only image). The
// same folder writable is refused.
func TestHandlerProgramOnAReadOnlyFileSystemRuns(t *testing.T) {
	dir := mountTmpfs(t, t.TempDir(), "image")
	p := filepath.Join(dir, "prog")
	writeProgram(t, p, `{"ran":true}`)
	if err := os.Chmod(p, 0o755); err != nil {
		t.Fatal(err)
	}
	cfgFile := writeConfig(t, map[string]any{"handlers": map[string]any{"org.example.p:1.0.0": map[string]any{"command": []string{p}}}})
	if _, err := serveConfigOf(t, "--config", cfgFile); err == nil || !exposedReason(err) {
		t.Fatalf("a program in a 0777 folder others may write was not refused: %v", err)
	}
	if err := unix.Mount("", dir, "", unix.MS_REMOUNT|unix.MS_RDONLY, "mode=0777,size=1m"); err != nil {
		t.Fatal(err)
	}
	cfg, err := serveConfigOf(t, "--config", cfgFile)
	if err != nil {
		t.Fatalf("a program on a read-only file system, its folder 0777, is refused: %v", err)
	}
	out, err := runProgram("org.example.p:1.0.0", cfg.Handlers["org.example.p:1.0.0"], slog.New(slog.DiscardHandler), nil)(context.Background(), map[string]any{})
	if err != nil {
		t.Fatalf("the program on a read-only file system did not run: %v (%v)", err, out)
	}
}

// TestHandlerProgramOnAReadOnlyViewOfAWritableFolderIsRefused: a read-only
// bind mount of a folder others may write (what Kubernetes does for a
// ConfigMap or Secret volume, and a hostPath or shared volume mounted
// read-only) says ST_RDONLY to statfs, yet others still write the program
// through the folder's other path. A reviewer replaced such a program
// through the writable path and the agent would have run it (threat:
// the read-only exemption trusting a view, not the storage). Refused.
func TestHandlerProgramOnAReadOnlyViewOfAWritableFolderIsRefused(t *testing.T) {
	base := t.TempDir()
	rw := mountTmpfs(t, base, "rw")
	p := filepath.Join(rw, "prog")
	writeProgram(t, p, `{"ran":true}`)
	if err := os.Chmod(p, 0o755); err != nil {
		t.Fatal(err)
	}
	ro := filepath.Join(base, "ro")
	if err := os.Mkdir(ro, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount(rw, ro, "", unix.MS_BIND, ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Unmount(ro, unix.MNT_DETACH) })
	if err := unix.Mount("", ro, "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY, ""); err != nil {
		t.Fatal(err)
	}
	var st unix.Statfs_t
	if err := unix.Statfs(ro, &st); err != nil || st.Flags&unix.ST_RDONLY == 0 {
		t.Fatalf("test setup: the bind mount is not read-only (%v)", err)
	}
	cfgFile := writeConfig(t, map[string]any{"handlers": map[string]any{"org.example.p:1.0.0": map[string]any{"command": []string{filepath.Join(ro, "prog")}}}})
	if _, err := serveConfigOf(t, "--config", cfgFile); err == nil || !exposedReason(err) {
		t.Fatalf("a program on a read-only view of a 0777 folder others may write was not refused: %v", err)
	}
}

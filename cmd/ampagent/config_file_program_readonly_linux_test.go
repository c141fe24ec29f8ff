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

// TestHandlerProgramOnAReadOnlyMountOthersCouldNotWriteRuns: Kubernetes
// mounts a ConfigMap or Secret volume read-only with its folders 0777 and
// not sticky (runc); a handler script shipped that way was refused by
// CLI-70 (handler_program_missing: "may be written by group or others"),
// and its hint, chmod go-w, cannot change a read-only mount (threat: the
// refusal of programs others may write turning away a common honest
// deployment where no one may write). On a read-only mount the mode is
// not judged; the owner still is, and the same folder mounted writable is
// refused. Mounting needs root (CAP_SYS_ADMIN), as the root-only rows of
// TestHandlerProgramAnotherUserMayWriteIsRefused need root.
func TestHandlerProgramOnAReadOnlyMountOthersCouldNotWriteRuns(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "configmap")
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
	p := filepath.Join(dir, "prog")
	writeProgram(t, p, `{"ran":true}`)
	if err := os.Chmod(p, 0o755); err != nil {
		t.Fatal(err)
	}
	cfgFile := writeConfig(t, map[string]any{"handlers": map[string]any{"org.example.p:1.0.0": map[string]any{"command": []string{p}}}})

	// Writable: others may replace the program, refused.
	if _, err := serveConfigOf(t, "--config", cfgFile); err == nil || !exposedReason(err) {
		t.Fatalf("a program in a 0777 folder others may write was not refused: %v", err)
	}
	if err := unix.Mount("", dir, "", unix.MS_REMOUNT|unix.MS_RDONLY, "mode=0777,size=1m"); err != nil {
		t.Fatal(err)
	}
	cfg, err := serveConfigOf(t, "--config", cfgFile)
	if err != nil {
		t.Fatalf("a program on a read-only mount, its folder 0777, is refused: %v", err)
	}
	out, err := runProgram("org.example.p:1.0.0", cfg.Handlers["org.example.p:1.0.0"], slog.New(slog.DiscardHandler), nil)(context.Background(), map[string]any{})
	if err != nil {
		t.Fatalf("the program on a read-only mount did not run: %v (%v)", err, out)
	}
}

package agent

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/capability"
)

// swapSpoolDir does what whoever may write the folder above a spool
// directory can do once the agent started: move the directory away and put
// another at its path (here a directory of "theirs"). It returns where the
// original went.
func swapSpoolDir(t *testing.T, dir string) (moved string) {
	t.Helper()
	moved = dir + ".moved"
	must(t, os.Rename(dir, moved))
	must(t, os.Mkdir(dir, 0o700))
	return moved
}

// TestSpoolDirectorySwappedAfterTheStartGetsNoSpoolFile: the agent makes
// its spool files in the directory it opened at the start, never at the
// path again: a directory swapped in at the path later (by a user who may
// write a folder above it) gets none of the spooled content, and the
// stream is still handed over whole, its file removed (CLI-56).
func TestSpoolDirectorySwappedAfterTheStartGetsNoSpoolFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "spool")
	must(t, os.Mkdir(dir, 0o700))
	e, rec := streamEnv(t, StreamLimits{SpoolThreshold: 8, SpoolDir: dir})
	moved := swapSpoolDir(t, dir)
	content := []byte("spooled content, more than eight bytes")
	e.send(amp.TypeStreamStart, startBody(t, "s", content, 10))
	e.send(amp.TypeStreamData, dataBody(t, "s", 0, content[:10]))
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Fatalf("the directory swapped in got spool files: %v", left)
	}
	if files, _ := filepath.Glob(filepath.Join(moved, "ampstream-*")); len(files) != 1 {
		t.Fatalf("spool files in the directory opened at the start: %v, want one", files)
	}
	for i, c := range chunks(content, 10)[1:] {
		e.send(amp.TypeStreamData, dataBody(t, "s", uint64(i+1), c))
	}
	wantAck(t, e.send(amp.TypeStreamEnd, endBody(t, "s", content)), "s", 4)
	if !bytes.Equal(rec.got["s"], content) {
		t.Fatalf("got %q", rec.got["s"])
	}
	if left, _ := os.ReadDir(moved); len(left) != 0 {
		t.Fatalf("spool files left: %v", left)
	}
}

// TestSpoolDirectoryReplacedByALinkStillServesParamsStreams: params kept
// in a spool file are written and read back through the directory opened
// at the start; a link put at the path afterwards (here to nowhere) changes
// nothing: the invocation runs on the streamed params (CLI-56).
func TestSpoolDirectoryReplacedByALinkStillServesParamsStreams(t *testing.T) {
	e, dir, got := paramsEnv(t, &ParamStreamLimits{})
	moved := dir + ".moved"
	must(t, os.Rename(dir, moved))
	must(t, os.Symlink(filepath.Join(t.TempDir(), "nowhere"), dir))
	r, _, err := e.client(e.caller, false).InvokeLarge(context.Background(), translateInvoke(t), bigText(t, 100<<10), 16<<10)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != capability.StatusSuccess {
		t.Fatalf("status %s", r.Status)
	}
	if g := got(); len(g) != 1 || g[0] != 100<<10 {
		t.Fatalf("the handler got %v", g)
	}
	if left, _ := os.ReadDir(moved); len(left) != 0 {
		t.Fatalf("spool files left: %v", left)
	}
}

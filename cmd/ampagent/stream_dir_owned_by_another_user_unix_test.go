//go:build unix

package main

import (
	"os"
	"testing"
)

// TestStreamDirOwnedByAnotherUserIsRefused: the stream directory holds
// the spool files of streamed params and streams, which the agent opens
// again by name before a handler gets them ("spooled content must be the
// agent's alone"). It was judged by its mode alone: a directory another
// user owns, mode 0700 or 0755, was taken, and that user (who may remove,
// rename and create any entry of a directory it owns, and chmod it at
// will) could put a FIFO or another file at a spool file's name. Its
// owner must now be the agent's user or root, as for a key file (CLI-53),
// else invalid_stream_dir at the start.
func TestStreamDirOwnedByAnotherUserIsRefused(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("giving a folder to another user needs root")
	}
	db, key := serveStore(t)
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	code, exit := serveFails(t, "--db", db, "--key", key, "--listen", "127.0.0.1:0", "--stream-dir", dir)
	if exit != 1 || code != "invalid_stream_dir" {
		t.Fatalf("a stream directory another user owns: %s exit %d, want invalid_stream_dir exit 1", code, exit)
	}
}

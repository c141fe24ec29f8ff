//go:build unix

package ocitransport_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/ocitransport"
)

// TestTarCommitWritesTheFolderItBuiltNeverOnePutAtItsName: a layout tar
// is built in a folder next to it (".NAME.layout-DIGITS", 0700), written
// and read through the folders the endpoint holds open (os.Root,
// docs/SPEC-DECISIONS.md OCI-26); but Commit wrote the tar by walking
// that folder's path again, stat'ing and opening each entry by its path
// (links followed, a FIFO's open waiting for a writer). In a tar's folder
// others may write (no sticky bit: OCI-25's threat), another user can
// rename the writer's folder away, between its Open and its Commit (a
// copy from a registry takes minutes), and put a folder of theirs at its
// name: Commit then wrote into the tar, with the writer's rights, a file
// of the writer's that a link there names (its credentials file, a key),
// tagged what the other user chose instead of what the writer built and
// checked, or waited forever on a FIFO (no --timeout reaches Commit).
// Commit must write the very folder it built, wherever it was moved
// (OCI-30).
func TestTarCommitWritesTheFolderItBuiltNeverOnePutAtItsName(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(secret, []byte(`{"auths":{"r.example":{"auth":"SECRET-OF-THE-WRITER"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	blobName := strings.Repeat("ab", 32)
	for _, tc := range []struct {
		name  string
		plant func(t *testing.T, blobs string) // puts the other user's entry in their blobs/sha256
	}{
		{"a link to a file of the writer's", func(t *testing.T, blobs string) {
			if err := os.Symlink(secret, filepath.Join(blobs, blobName)); err != nil {
				t.Fatal(err)
			}
		}},
		{"a FIFO", func(t *testing.T, blobs string) {
			if err := syscall.Mkfifo(filepath.Join(blobs, blobName), 0o666); err != nil {
				t.Skipf("no FIFO here: %v", err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			tarPath := filepath.Join(dir, "site.tar")
			ep := mustOpen(t, "oci-layout:"+tarPath, ocitransport.Options{}, ocitransport.ReadWrite)
			defer ep.Close()
			pushSample(t, ep, "v1")
			temps, err := filepath.Glob(filepath.Join(dir, ".site.tar.layout-*"))
			if err != nil || len(temps) != 1 {
				t.Fatalf("the tar's folder holds %q, want one .site.tar.layout-* folder (%v)", temps, err)
			}
			// The other user: the writer's folder renamed away, theirs put
			// at its name.
			if err := os.Rename(temps[0], filepath.Join(dir, "moved")); err != nil {
				t.Fatal(err)
			}
			blobs := filepath.Join(temps[0], "blobs", "sha256")
			if err := os.MkdirAll(blobs, 0o755); err != nil {
				t.Fatal(err)
			}
			for name, body := range map[string]string{"oci-layout": `{"imageLayoutVersion":"1.0.0"}`, "index.json": `{"schemaVersion":2,"manifests":[]}`} {
				if err := os.WriteFile(filepath.Join(temps[0], name), []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			tc.plant(t, blobs)
			done := make(chan error, 1)
			go func() { done <- ep.Commit() }()
			select {
			case err = <-done:
			case <-time.After(20 * time.Second): // a hang guard: an open of the FIFO waits forever
				if w, err := os.OpenFile(filepath.Join(blobs, blobName), os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
					w.Close() // lets the waiting open go
				}
				<-done
				t.Fatalf("Commit still waiting after 20 s on a FIFO put in a folder at its temporary folder's name: it opened the other user's folder by path")
			}
			if err != nil {
				t.Fatalf("Commit, its folder swapped for another user's: %v (it must write the folder it built)", err)
			}
			raw, err := os.ReadFile(tarPath)
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Contains(raw, []byte("SECRET-OF-THE-WRITER")) {
				t.Fatalf("the tar holds the writer's file a link in the other user's folder named: read with the writer's rights, carried away in the tar")
			}
			src := mustOpen(t, "oci-layout:"+tarPath, ocitransport.Options{}, ocitransport.ReadOnly)
			defer src.Close()
			if _, err := src.Resolve(context.Background(), "v1"); err != nil {
				t.Fatalf("the tar lacks the bundle the writer pushed and tagged (it holds the other user's folder): %v", err)
			}
		})
	}
}

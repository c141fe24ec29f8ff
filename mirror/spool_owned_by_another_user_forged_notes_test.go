//go:build unix

package mirror

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestNotesInASpoolAnotherUserOwnsSkipARevocation: MIRROR-16
// reads the local refusals (refused-HASH) only when neither the spool
// folder nor the notes file is writable by group or others, by the mode
// bits alone. A spool folder owned by another local user with mode 0755
// (the sync run as root or as a service user against a store in that
// user's home, "--db /home/u/store" makes /home/u/store.sync) passes: its
// owner writes it at will, plants a note for a genuine revocation's
// SHA-256 at the store's generation, renews it daily, and the host never
// applies the revocation. Before MIRROR-17 the note was read and the
// revocation skipped. Should: notes are read only from a folder and a
// file owned by the sync's own user (or root), else read as none (the
// cost is a download again), as for a folder others may write.
func TestNotesInASpoolAnotherUserOwnsSkipARevocation(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give the spool to another user")
	}
	const other = 4242
	hm := newRepeatMirror(t)
	rev := revokedEcho1(t, testKey)
	hm.statement(rev)
	ts := httptest.NewServer(hm)
	defer ts.Close()
	s := agentStore(t, testBundle(t, 1))
	spool := filepath.Join(filepath.Dir(s.Path()), "sync")
	if err := os.MkdirAll(spool, 0o755); err != nil {
		t.Fatal(err)
	}
	c, err := newSyncClient(SyncOptions{URL: ts.URL, SpoolDir: spool}, syncHooks{})
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(rev)
	forged := fmt.Sprintf("%d %d\n%s rotation_gap", s.Generation(), testNow.Unix(), hex.EncodeToString(sum[:]))
	if err := os.WriteFile(c.localRefusalsPath(), []byte(forged), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{spool, c.localRefusalsPath()} {
		if err := os.Chown(p, other, other); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := syncOnce(t, s, ts.URL, func(o *SyncOptions) { o.Now = func() time.Time { return testNow } })
	if err != nil {
		t.Fatal(err)
	}
	if !echoRevoked(t, s) {
		t.Fatalf("a note planted in a spool folder another user owns kept a genuine revocation from being applied: %+v", rep.Statements)
	}
}

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

// TestNotesInASpoolWhoseParentOthersMayWriteSkipARevocation: MIRROR-17
// reads the local refusals (refused-HASH) when the spool folder and the
// notes file are the sync's user's (or root's) and not writable by group
// or others, and checked nothing above them. A user who may write a folder
// above the spool (a shared data folder made 0777 without the sticky bit:
// `--db /srv/shared/store` spools in /srv/shared/store.sync) renames the
// spool away and puts there a folder of theirs holding a forged note for a
// genuine revocation's SHA-256 at the store's generation (or swaps it
// between the check and the read). The test keeps the spool and the note
// the sync's user's (root here: no other user needed) and leaves the
// parent writable by everyone, which is what lets the swap happen at any
// time. Before MIRROR-18 the note was read and the revocation skipped.
// Should: the notes are read only when every folder above the spool, up to
// /, is owned by root or the sync's user and not writable by group or
// others unless sticky (as ssh's StrictModes checks a home), else read as
// none with a warning (the cost is a download again).
func TestNotesInASpoolWhoseParentOthersMayWriteSkipARevocation(t *testing.T) {
	hm := newRepeatMirror(t)
	rev := revokedEcho1(t, testKey)
	hm.statement(rev)
	ts := httptest.NewServer(hm)
	defer ts.Close()
	s := agentStore(t, testBundle(t, 1))
	shared := filepath.Join(t.TempDir(), "shared")
	if err := os.Mkdir(shared, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(shared, 0o777); err != nil { // no sticky bit
		t.Fatal(err)
	}
	spool := filepath.Join(shared, "store.sync")
	if err := os.Mkdir(spool, 0o700); err != nil {
		t.Fatal(err)
	}
	c, err := newSyncClient(SyncOptions{URL: ts.URL, SpoolDir: spool}, syncHooks{})
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(rev)
	forged := fmt.Sprintf("%d %d\n%s rotation_gap", s.Generation(), testNow.Unix(), hex.EncodeToString(sum[:]))
	if err := os.WriteFile(c.localRefusalsPath(), []byte(forged), 0o600); err != nil {
		t.Fatal(err)
	}
	rep, err := syncOnce(t, s, ts.URL, func(o *SyncOptions) { o.SpoolDir = spool; o.Now = func() time.Time { return testNow } })
	if err != nil {
		t.Fatal(err)
	}
	if !echoRevoked(t, s) {
		t.Fatalf("a note in a spool folder whose parent everyone may write kept a genuine revocation from being applied: %+v", rep.Statements)
	}
}

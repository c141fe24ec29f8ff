package mirror

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// TestNotesInASpoolOthersCanWriteSkipARevocation: the local
// refusals (refused-HASH in the spool folder) make a sync skip a listed
// file, without downloading it, at the store's generation for a day. A
// local user who can write the spool folder (one made group or world
// writable: a shared spool, an operator's chmod) plants such a note for a
// genuine revocation's SHA-256 at the store's current generation, and
// renews it each day: the host never applies the revocation, and the
// revoked bundle keeps being served, while each run reports it "refused by
// an earlier sync". Should: notes are read only from a spool folder and a
// file no one else may write (as the agent's stream folder must be); any
// other is read as empty (a re-download costs bytes, never a withheld
// statement).
func TestNotesInASpoolOthersCanWriteSkipARevocation(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("mode bits")
	}
	hm := newRepeatMirror(t)
	rev := revokedEcho1(t, testKey)
	hm.statement(rev)
	ts := httptest.NewServer(hm)
	defer ts.Close()
	s := agentStore(t, testBundle(t, 1))
	spool := filepath.Join(filepath.Dir(s.Path()), "sync")
	if err := os.MkdirAll(spool, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(spool, 0o777); err != nil {
		t.Fatal(err)
	}
	c, err := newSyncClient(SyncOptions{URL: ts.URL, SpoolDir: spool}, syncHooks{})
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(rev)
	forged := fmt.Sprintf("%d %d\n%s rotation_gap", s.Generation(), testNow.Unix(), hex.EncodeToString(sum[:]))
	if err := os.WriteFile(c.localRefusalsPath(), []byte(forged), 0o666); err != nil {
		t.Fatal(err)
	}
	rep, err := syncOnce(t, s, ts.URL, func(o *SyncOptions) { o.Now = func() time.Time { return testNow } })
	if err != nil {
		t.Fatal(err)
	}
	if !echoRevoked(t, s) {
		t.Fatalf("a note planted in a spool folder anyone may write kept a genuine revocation from being applied: %+v", rep.Statements)
	}
}

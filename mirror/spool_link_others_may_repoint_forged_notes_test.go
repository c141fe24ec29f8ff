//go:build unix

package mirror

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestSpoolLinkOthersMayRepointForgesNotes: MIRROR-18 reads the
// local refusals only when every folder above the spool, along the path
// as given and the path it resolves to, is owned by root or the sync's
// user and not writable by others unless sticky. A spool reached through a
// chain of links (`--db /srv/amp/store`, /srv/amp a link to
// /home/eve/amp, itself a link to /var/lib/amp, as a migration or a
// shared home leaves) passes both walks whatever the middle link points
// to: /home/eve, which holds it, is on neither path. Eve points her link
// at any folder of the sync's user whose notes serve her (another store's
// spool synced from the same mirror, which noted a genuine revocation's
// SHA-256 as not signed as it requires: it does not trust the signer), or
// flips it between the check and the read, and the host never applies the
// revocation. The test stands for eve with a folder everyone may write
// holding the middle link (as MIRROR-17's test, the files are the test
// user's: no other user needed): pointed at the folder holding the note,
// then flipped while notes are loaded. Before MIRROR-21 the note was read
// (the walks judged only the folders above the two paths). Should: every
// folder the spool's resolution looks a name up in, the one holding a link
// included, is judged, and the notes are read through the path so
// resolved: a link others may repoint makes the notes read as none.
func TestSpoolLinkOthersMayRepointForgesNotes(t *testing.T) {
	root := t.TempDir()
	mk := func(p string, mode os.FileMode) string {
		t.Helper()
		if err := os.MkdirAll(p, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := mk(filepath.Join(root, "var", "amp"), 0o700)      // the genuine spool's folder
	eve := mk(filepath.Join(root, "eve"), 0o777)              // a folder others may write, no sticky bit
	forged := mk(filepath.Join(root, "forged", "amp"), 0o700) // where eve's note lies
	srv := mk(filepath.Join(root, "srv"), 0o700)
	mk(filepath.Join(good, "store.sync"), 0o700)
	mk(filepath.Join(forged, "store.sync"), 0o700)
	middle := filepath.Join(eve, "amp")
	if err := os.Symlink(good, middle); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(middle, filepath.Join(srv, "amp")); err != nil {
		t.Fatal(err)
	}
	spool := filepath.Join(srv, "amp", "store.sync")

	const url = "http://mirror.example"
	c, err := newSyncClient(SyncOptions{URL: url, SpoolDir: spool, Now: func() time.Time { return testNow }}, syncHooks{})
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte("a genuine revocation"))
	note := fmt.Sprintf("7 %d\n%s rotation_gap", testNow.Unix(), hex.EncodeToString(sum[:]))
	name := filepath.Base(c.localRefusalsPath())
	if err := os.WriteFile(filepath.Join(forged, "store.sync", name), []byte(note), 0o600); err != nil {
		t.Fatal(err)
	}

	forgedNote := func() bool {
		var l localRefusals
		l.load(c)
		_, ok := l.sums[hex.EncodeToString(sum[:])]
		return ok
	}
	if err := os.Remove(middle); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(forged, middle); err != nil {
		t.Fatal(err)
	}
	if forgedNote() {
		t.Fatalf("the notes were read through a link kept in a folder others may write (%s), pointed at another folder's notes: a forged note skips a genuine revocation", eve)
	}

	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // eve, repointing her link as fast as she can
		defer wg.Done()
		tmp := filepath.Join(eve, "amp.new")
		for i := 0; !stop.Load(); i++ {
			target := good
			if i%2 == 1 {
				target = forged
			}
			os.Remove(tmp)
			if os.Symlink(target, tmp) == nil {
				os.Rename(tmp, middle)
			}
		}
	}()
	defer func() { stop.Store(true); wg.Wait() }()

	// Before MIRROR-21 a flip landed between the check and the read within
	// a few hundred loads (milliseconds); a second of loads is far more
	// than that even on a loaded machine, and bounds the test.
	for end := time.Now().Add(time.Second); time.Now().Before(end); {
		if forgedNote() {
			t.Fatalf("the notes were read through a link kept in a folder others may write (%s), repointed after the check: a forged note skips a genuine revocation", eve)
		}
	}
}

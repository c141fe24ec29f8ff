package mirror

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestSpoolTempFilesLeftByACrashStayForever: the local refusals
// and the list of failed files are written whole or not at all, through a
// temporary file in the spool folder (.refused-*, .last-failed-*) renamed
// over the real one. A sync killed between the two (a timer's timeout, a
// reboot, a full disk) leaves the temporary file, up to 2 MiB for the
// refusals, and nothing ever removes it: pruneSpool removes only *.part,
// removeStaleLocalRefusals only refused-*. A host syncing every few
// minutes for years that is killed now and then fills the spool folder
// (whose partial files have a byte limit these do not count against).
// Should: the next run removes such temporary files once they are older
// than any run could be writing (a day).
func TestSpoolTempFilesLeftByACrashStayForever(t *testing.T) {
	hm := newRepeatMirror(t)
	ts := httptest.NewServer(hm)
	defer ts.Close()
	s := agentStore(t)
	spool := filepath.Join(filepath.Dir(s.Path()), "sync")
	if err := os.MkdirAll(spool, 0o700); err != nil {
		t.Fatal(err)
	}
	old := testNow.Add(-48 * time.Hour)
	var left []string
	for _, name := range []string{".refused-123456", ".last-failed-654321"} {
		p := filepath.Join(spool, name)
		if err := os.WriteFile(p, make([]byte, 1<<20), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
		left = append(left, p)
	}
	if _, err := syncOnce(t, s, ts.URL, func(o *SyncOptions) { o.Now = func() time.Time { return testNow } }); err != nil {
		t.Fatal(err)
	}
	for _, p := range left {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s, a temporary file a crashed sync left two days ago, is still in the spool folder after a sync", filepath.Base(p))
		}
	}
}

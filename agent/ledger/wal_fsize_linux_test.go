//go:build linux

package ledger

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
)

// TestWALWithoutRoomForItsReserveStillWrites: on a nearly full disk
// (here: a file size limit of 256 KiB, set in a child process) the 1 MiB
// reserve cannot be written; the log then appends each group alone
// instead of refusing every write (threat: a ledger that stops working
// while the disk still has room for its records). When even the group
// does not fit, the write is refused retryably (5002) and nothing
// acknowledged is lost: reopened, every reply replays.
func TestWALWithoutRoomForItsReserveStillWrites(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a process")
	}
	path := filepath.Join(t.TempDir(), "l.wal")
	cmd := exec.Command(os.Args[0], "-test.run=^TestWALFileSizeHelperProcess$")
	cmd.Env = append(os.Environ(), "LEDGER_WAL_FSIZE_HELPER="+path)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	var n int
	var name string
	if _, err := fmt.Sscanf(lastLine(string(out), "done "), "done %d %s", &n, &name); err != nil {
		t.Fatalf("helper said %q", out)
	}
	if n < 100 || name != string(ErrLedgerIO) {
		t.Fatalf("%d replies recorded before the refusal %q; want about 256 KiB of them, then ledger_unavailable", n, name)
	}
	c := newClock()
	s := openTestWAL(t, path, c, WALOptions{})
	defer s.Close()
	for i := 0; i < n; i++ {
		rec, ok, err := s.Lookup(Key{Sender: "did:key:zFull", ID: id(i)})
		if err != nil || !ok || !bytes.Equal(rec.Reply, fullReply(i)) {
			t.Fatalf("reply %d of %d: %v %v", i, n, ok, err)
		}
	}
}

func lastLine(out, prefix string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return ""
}

func fullReply(i int) []byte { return bytes.Repeat([]byte{byte(i)}, 1000) }

// TestWALFileSizeHelperProcess is TestWALWithoutRoomForItsReserveStillWrites'
// child: it writes Running and a 1000-byte reply, one key after another,
// under a 256 KiB file size limit, and prints how many replies were
// recorded before the first refusal.
func TestWALFileSizeHelperProcess(t *testing.T) {
	path := os.Getenv("LEDGER_WAL_FSIZE_HELPER")
	if path == "" {
		t.Skip("helper process only")
	}
	signal.Ignore(syscall.SIGXFSZ) // a write past the limit fails with EFBIG instead
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: 256 << 10, Max: 256 << 10}); err != nil {
		t.Fatal(err)
	}
	c := newClock()
	s, err := OpenWAL(path, WALOptions{Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := 0; i < 10000; i++ {
		k := Key{Sender: "did:key:zFull", ID: id(i)}
		err := s.MarkRunning(k, c.Now().Add(time.Hour))
		if err == nil {
			err = s.Finish(k, fullReply(i))
		}
		if err != nil {
			fmt.Printf("done %d %s\n", i, amp.NameOf(err))
			return
		}
	}
	fmt.Println("done 10000 none")
}

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

// TestWALOnAFullDiskRefusesRunningNeverTheReply: on a disk that fills up
// (here: a real file size limit of 256 KiB, set in a child process: writes
// past it fail with EFBIG, as they would with ENOSPC) the log refuses a
// new running entry, retryably (5004 ledger_no_space) and before its
// handler could run, but never the reply of an entry it accepted: that
// reply's room was written when the entry was (threat: a full disk
// turning into successes that were never recorded, which a retry then
// answers "outcome unknown"). Reopened, every recorded reply replays.
func TestWALOnAFullDiskRefusesRunningNeverTheReply(t *testing.T) {
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
	var step, name string
	if _, err := fmt.Sscanf(lastLine(string(out), "done "), "done %d %s %s", &n, &step, &name); err != nil {
		t.Fatalf("helper said %q", out)
	}
	if n < 100 || step != "running" || name != string(ErrNoSpace) {
		t.Fatalf("%d replies recorded, then %s refused with %q; want about 256 KiB of them, then Running refused with %s", n, step, name, ErrNoSpace)
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
	if _, ok, _ := s.Lookup(Key{Sender: "did:key:zFull", ID: id(n)}); ok {
		t.Fatal("the refused entry was recorded")
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

// TestWALFileSizeHelperProcess is TestWALOnAFullDiskRefusesRunningNeverTheReply's
// child: under a 256 KiB file size limit it marks two keys running at a
// time (reserving 4 KiB replies) and records a 1000-byte reply for each,
// and prints how many replies were recorded before the first refusal, and
// which step was refused.
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
	s, err := OpenWAL(path, WALOptions{Now: c.Now, Limits: Limits{ReplyReserve: 4 << 10}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := 0; i < 10000; i += 2 {
		running := 0
		for j := i; j < i+2; j++ {
			if err := s.MarkRunning(Key{Sender: "did:key:zFull", ID: id(j)}, c.Now().Add(time.Hour)); err != nil {
				if j == i+1 { // the first one ran: its reply is recorded
					if ferr := s.Finish(Key{Sender: "did:key:zFull", ID: id(i)}, fullReply(i)); ferr != nil {
						fmt.Printf("done %d finish %s\n", i, amp.NameOf(ferr))
						return
					}
				}
				fmt.Printf("done %d running %s\n", j, amp.NameOf(err))
				return
			}
			running++
		}
		for j := i; j < i+running; j++ {
			if err := s.Finish(Key{Sender: "did:key:zFull", ID: id(j)}, fullReply(j)); err != nil {
				fmt.Printf("done %d finish %s\n", j, amp.NameOf(err))
				return
			}
		}
	}
	fmt.Println("done 10000 none none")
}

//go:build unix

package regfile

import (
	"os"
	"strconv"
	"testing"

	"github.com/ampbundle/ampbundle/internal/regfile/regfiletest"
)

// TestFileAnotherUserMayWriteIsRefusedByOneRule: the agent's config file
// (CLI-54), a CA file (CLI-86) and the ledger's log (AGENT-41) each had a
// copy of one rule (another user than this process's or root owns it, or
// group or others may write it), so a fix to one copy could miss the
// others (threat: three judges of "who may have written this file" that
// drift apart). OthersMayWrite is now that rule, and Reason its words:
// the owner judged before the mode, reading left open to all, the uid
// and mode the system gave in the refusal (CLI-91).
func TestFileAnotherUserMayWriteIsRefusedByOneRule(t *testing.T) {
	me := uint32(os.Geteuid())
	other := me + 1
	if other == 0 {
		other = 2
	}
	self := strconv.Itoa(os.Geteuid())
	for _, c := range []struct {
		uid    uint32
		perm   os.FileMode
		reason string // "": loaded
	}{
		{me, 0o600, ""},
		{me, 0o644, ""},
		{me, 0o444, ""},
		{0, 0o644, ""},
		{me, 0o664, "the file may be written by group or others (mode 0664)"},
		{me, 0o646, "the file may be written by group or others (mode 0646)"},
		{0, 0o620, "the file may be written by group or others (mode 0620)"},
		{other, 0o444, "the file is owned by another user (uid " + strconv.Itoa(int(other)) + ") than this one (uid " + self + ") or root"},
		{other, 0o666, "the file is owned by another user (uid " + strconv.Itoa(int(other)) + ") than this one (uid " + self + ") or root"},
	} {
		w := OthersMayWrite(regfiletest.Stat(c.uid, c.perm))
		switch {
		case c.reason == "" && w != nil:
			t.Errorf("uid %d mode %04o: refused (%s)", c.uid, c.perm, w.Reason("the file", "this one"))
		case c.reason != "" && w == nil:
			t.Errorf("uid %d mode %04o: loaded, want %q", c.uid, c.perm, c.reason)
		case c.reason != "" && w.Reason("the file", "this one") != c.reason:
			t.Errorf("uid %d mode %04o: %q, want %q", c.uid, c.perm, w.Reason("the file", "this one"), c.reason)
		case w != nil && w.Foreign == w.Writable:
			t.Errorf("uid %d mode %04o: Foreign %v and Writable %v, want exactly one", c.uid, c.perm, w.Foreign, w.Writable)
		}
	}
}

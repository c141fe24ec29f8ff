package regfile

import (
	"fmt"
	"io/fs"
	"os"
)

// Writers says why OthersMayWrite refuses a file: exactly one of Foreign
// and Writable is set.
type Writers struct {
	// Foreign: the file is owned by UID, another user than this
	// process's effective user and root (ForeignOwner).
	Foreign bool
	UID     uint32
	// Writable: group or others may write the file (Mode, its
	// permission bits).
	Writable bool
	Mode     fs.FileMode
}

// OthersMayWrite is the one rule for a file a process trusts for what it
// holds: the agent's config file (cmd/ampagent/config_file_unix.go), a
// CA file (internal/cliutil/tls_ca_unix.go) and the ledger's log
// (agent/ledger). st, the fstat of the file opened, is refused when
// another user than this process's effective one or root owns it
// (ForeignOwner), or when group or others may write it: that user chose,
// or may yet choose, what it holds. Reading it stays open to all. It
// returns nil when neither holds, and always where mode bits are not
// access rights (Windows reports 0666 for every writable file): there
// the file is read as the folder it lies in lets it be
// (docs/SPEC-DECISIONS.md CLI-54, CLI-86, AGENT-41, CLI-91).
func OthersMayWrite(st fs.FileInfo) *Writers {
	if !modeBitsAreRights {
		return nil
	}
	if uid, foreign := ForeignOwner(st); foreign {
		return &Writers{Foreign: true, UID: uid}
	}
	if perm := st.Mode().Perm(); perm&0o022 != 0 {
		return &Writers{Writable: true, Mode: perm}
	}
	return nil
}

// Reason says why w refuses the file what names ("the config file"),
// whose naming the user this process runs as ("the agent's", "this
// one"): "WHAT is owned by another user (uid U) than WHOSE (uid E) or
// root", or "WHAT may be written by group or others (mode 0664)". It
// holds numbers the system gave and the caller's words, never a path or
// text another user chose.
func (w *Writers) Reason(what, whose string) string {
	if w.Foreign {
		return fmt.Sprintf("%s is owned by another user (uid %d) than %s (uid %d) or root", what, w.UID, whose, os.Geteuid())
	}
	return fmt.Sprintf("%s may be written by group or others (mode %04o)", what, w.Mode)
}

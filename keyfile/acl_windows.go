//go:build windows

package keyfile

import (
	"errors"
	"io/fs"
	"os"
	"runtime"
	"unsafe"

	"golang.org/x/sys/windows"
)

// judgeOpenFile judges the security descriptor of the open file f (its
// mode bits say nothing here: os.Stat reports 0666 for every writable
// file): the owner and the access list are read from f's handle, never
// by name, so the file judged is the file read (docs/SPEC-DECISIONS.md,
// CLI-51), and judged by judgeACL. A descriptor that cannot be read is
// ErrKeyUnreadable.
func judgeOpenFile(f *os.File, _ fs.FileInfo, what string) error {
	s, err := securityOf(f)
	if err != nil {
		return fail(ErrKeyUnreadable, "cannot read the access list of the %s", what).WithCause(err)
	}
	return judgeACL(s).err(what)
}

// securityOf reads the owner and the access list of f through its handle
// (GetSecurityInfo: the handle's GENERIC_READ includes READ_CONTROL), and
// the user of this process's token.
func securityOf(f *os.File) (fileSecurity, error) {
	var s fileSecurity
	u, err := windows.GetCurrentProcessToken().GetTokenUser()
	if err != nil {
		return s, err
	}
	s.tokenUser = sidString(u.User.Sid)
	rc, err := f.SyscallConn()
	if err != nil {
		return s, err
	}
	var sd *windows.SECURITY_DESCRIPTOR
	var getErr error
	if err := rc.Control(func(h uintptr) {
		sd, getErr = windows.GetSecurityInfo(windows.Handle(h), windows.SE_FILE_OBJECT,
			windows.OWNER_SECURITY_INFORMATION|windows.DACL_SECURITY_INFORMATION)
	}); err != nil {
		return s, err
	}
	if getErr != nil {
		return s, getErr
	}
	defer runtime.KeepAlive(sd) // the owner and the entries point into it
	if owner, _, err := sd.Owner(); err == nil && owner != nil {
		s.owner = sidString(owner)
	}
	dacl, _, err := sd.DACL()
	switch {
	case errors.Is(err, windows.ERROR_OBJECT_NOT_FOUND) || (err == nil && dacl == nil):
		// No access list, or a NULL one: everyone has every right.
		s.nullDACL = true
		return s, nil
	case err != nil:
		return s, err
	}
	for i := range uint32(dacl.AceCount) {
		var ace *windows.ACCESS_ALLOWED_ACE
		if err := windows.GetAce(dacl, i, &ace); err != nil {
			return s, err
		}
		s.entries = append(s.entries, entryOf(ace))
	}
	return s, nil
}

// entryOf reads one access list entry: its type and mask, and for the
// allow types judgeACL reads (aceAccessAllowed, aceAccessAllowedCallback:
// the SID 8 bytes in, after the header and the mask) the SID, only when
// it lies whole within the entry and is valid; else sid stays "" and
// judgeACL refuses the entry.
func entryOf(ace *windows.ACCESS_ALLOWED_ACE) aclEntry {
	e := aclEntry{kind: ace.Header.AceType, mask: uint32(ace.Mask)}
	if e.kind != aceAccessAllowed && e.kind != aceAccessAllowedCallback {
		return e
	}
	const sidAt, sidHead = 8, 8 // the SID's own head: revision, count, authority
	size := int(ace.Header.AceSize)
	if size < sidAt+sidHead {
		return e
	}
	sid := (*windows.SID)(unsafe.Pointer(&ace.SidStart))
	if sidAt+sidHead+4*int(sid.SubAuthorityCount()) > size || !sid.IsValid() {
		return e
	}
	e.sid = sidString(sid)
	return e
}

// sidString is the string form of sid ("S-1-5-…"), "" when it has none.
func sidString(sid *windows.SID) string {
	if sid == nil || !sid.IsValid() {
		return ""
	}
	return sid.String()
}

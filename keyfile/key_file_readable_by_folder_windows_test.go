//go:build windows

package keyfile

import (
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"golang.org/x/sys/windows"
)

// TestPrivateKeyFileInAFolderOthersReadIsOwnerOnlyFromItsCreation: on
// Windows the key file's mode (0600) is not an access right, and its
// temporary file (.ampbundle-key-DIGITS.tmp) was created with no security
// descriptor, so it took the inheritable entries of its folder's access
// list: in a folder Everyone may read (C:\ProgramData, a share) another
// user could open the private key while keygen wrote it, and after (the
// key file is that file, linked into place). The temporary file is now
// created with a protected access list allowing this user alone, and the
// key file keeps it (docs/SPEC-DECISIONS.md, CLI-45).
func TestPrivateKeyFileInAFolderOthersReadIsOwnerOnlyFromItsCreation(t *testing.T) {
	u, err := windows.GetCurrentProcessToken().GetTokenUser()
	if err != nil {
		t.Fatal(err)
	}
	me := u.User.Sid
	dir := t.TempDir()
	// The folder: its user may do anything, Everyone (WD) may read, and
	// both entries are inherited by what is created in it (OICI).
	sd, err := windows.SecurityDescriptorFromString("D:P(A;OICI;FA;;;" + me.String() + ")(A;OICI;FR;;;WD)")
	if err != nil {
		t.Fatal(err)
	}
	dacl, _, err := sd.DACL()
	if err != nil {
		t.Fatal(err)
	}
	if err := windows.SetNamedSecurityInfo(dir, windows.SE_FILE_OBJECT, windows.DACL_SECURITY_INFORMATION|windows.PROTECTED_DACL_SECURITY_INFORMATION, nil, nil, dacl, nil); err != nil {
		t.Fatal(err)
	}
	seen := false
	w := systemSteps()
	write := w.writeData
	w.writeData = func(f *os.File, data []byte) error {
		seen = true
		ownerOnlyFile(t, f.Name(), me, "the temporary file, while the key is written to it")
		return write(f, data)
	}
	key := filepath.Join(dir, "k.pem")
	if err := writePrivate(w, key, testKey()); err != nil {
		t.Fatal(err)
	}
	if !seen {
		t.Fatal("test setup: the key was not written through its temporary file")
	}
	ownerOnlyFile(t, key, me, "the key file")
}

// ownerOnlyFile fails t unless the access list of the file name is
// protected (nothing inherited from its folder) and allows only me.
func ownerOnlyFile(t *testing.T, name string, me *windows.SID, what string) {
	t.Helper()
	sd, err := windows.GetNamedSecurityInfo(name, windows.SE_FILE_OBJECT, windows.DACL_SECURITY_INFORMATION)
	if err != nil {
		t.Fatal(err)
	}
	control, _, err := sd.Control()
	if err != nil {
		t.Fatal(err)
	}
	if control&windows.SE_DACL_PROTECTED == 0 {
		t.Errorf("%s inherits its folder's access list: %s", what, sd)
	}
	dacl, _, err := sd.DACL()
	if err != nil || dacl == nil {
		t.Fatalf("%s has no access list (everyone may open it): %v", what, err)
	}
	for i := range uint32(dacl.AceCount) {
		var ace *windows.ACCESS_ALLOWED_ACE
		if err := windows.GetAce(dacl, i, &ace); err != nil {
			t.Fatal(err)
		}
		sid := (*windows.SID)(unsafe.Pointer(&ace.SidStart))
		if ace.Header.AceType == windows.ACCESS_ALLOWED_ACE_TYPE && !sid.Equals(me) {
			t.Errorf("%s allows %s access (mask %#x): %s", what, sid, ace.Mask, sd)
		}
	}
}

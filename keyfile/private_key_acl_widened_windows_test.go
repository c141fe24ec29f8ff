//go:build windows

package keyfile

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
	"golang.org/x/sys/windows"
)

// TestPrivateKeyWhoseAccessListWasWidenedIsRefused: a key file keyfile
// writes (owner-only from its creation, CLI-45) is read back, though
// os.Stat reports it 0666; once its access list lets another user read it
// (Everyone, Users), or it has a NULL list, it is refused as
// insecure_key_file (docs/SPEC-DECISIONS.md, CLI-51). The list is changed
// through a handle (SetSecurityInfo), as another tool would.
func TestPrivateKeyWhoseAccessListWasWidenedIsRefused(t *testing.T) {
	u, err := windows.GetCurrentProcessToken().GetTokenUser()
	if err != nil {
		t.Fatal(err)
	}
	me := u.User.Sid.String()
	for _, tc := range []struct {
		name string
		sddl string // "" for a NULL list
	}{
		{"Everyone may read", "D:P(A;;FA;;;" + me + ")(A;;FR;;;WD)"},
		{"Users may read", "D:P(A;;FA;;;" + me + ")(A;;FR;;;BU)"},
		{"NULL list", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := filepath.Join(t.TempDir(), "k.pem")
			if err := WritePrivate(key, testKey()); err != nil {
				t.Fatal(err)
			}
			if _, err := ReadPrivate(key); err != nil {
				t.Fatalf("the key file keyfile wrote is refused: %v", err)
			}
			setDACL(t, key, tc.sddl)
			if _, err := ReadPrivate(key); !errors.Is(err, amp.ErrName(ErrInsecureKeyFile)) {
				t.Fatalf("a key file others may read: %v, want insecure_key_file", err)
			}
		})
	}
}

// setDACL gives the file name the protected access list of sddl ("" for a
// NULL list), through a handle opened for WRITE_DAC.
func setDACL(t *testing.T, name, sddl string) {
	t.Helper()
	var dacl *windows.ACL
	if sddl != "" {
		sd, err := windows.SecurityDescriptorFromString(sddl)
		if err != nil {
			t.Fatal(err)
		}
		if dacl, _, err = sd.DACL(); err != nil {
			t.Fatal(err)
		}
	}
	p, err := windows.UTF16PtrFromString(name)
	if err != nil {
		t.Fatal(err)
	}
	h, err := windows.CreateFile(p, windows.WRITE_DAC|windows.READ_CONTROL,
		windows.FILE_SHARE_READ|windows.FILE_SHARE_WRITE|windows.FILE_SHARE_DELETE, nil,
		windows.OPEN_EXISTING, windows.FILE_ATTRIBUTE_NORMAL, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer windows.CloseHandle(h)
	if err := windows.SetSecurityInfo(h, windows.SE_FILE_OBJECT,
		windows.DACL_SECURITY_INFORMATION|windows.PROTECTED_DACL_SECURITY_INFORMATION, nil, nil, dacl, nil); err != nil {
		t.Fatal(err)
	}
}

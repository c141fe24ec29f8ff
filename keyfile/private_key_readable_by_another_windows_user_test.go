package keyfile

import (
	"errors"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
)

// TestPrivateKeyReadableByAnotherWindowsUserIsRefused
//
// Threat (another user of a Windows machine): a private key file whose
// access list lets that user read it (an entry for Everyone, Users or
// Authenticated Users inherited from C:\ProgramData or a share, a NULL
// list, a file another account owns and may re-list at will) gives the
// publisher's or agent's key away. The readers judged the file by its
// mode bits, which Windows reports as 0666 for every writable file, so
// every key file was refused (docs/SPEC-DECISIONS.md, CLI-45), and the
// access list was never looked at. Defence (CLI-51): on Windows the
// open file's security descriptor is judged (judgeACL, the rule of
// Win32-OpenSSH for a private key): the owner is this user, SYSTEM or
// Administrators; the list exists; no allow entry gives anyone else more
// than harmlessRights; deny entries grant nothing; an entry not read
// refuses. The judgement is pure, so its table runs on every system;
// private_key_acl_widened_windows_test.go reads real files on Windows.
func TestPrivateKeyReadableByAnotherWindowsUserIsRefused(t *testing.T) {
	const (
		me        = "S-1-5-21-1004336348-1177238915-682003330-1001"
		other     = "S-1-5-21-1004336348-1177238915-682003330-1002"
		everyone  = "S-1-1-0"
		users     = "S-1-5-32-545"
		authUsers = "S-1-5-11"
		fullFile  = 0x001F01FF // FILE_ALL_ACCESS ("FA")
		readFile  = 0x00120089 // FILE_GENERIC_READ ("FR")
		writeData = 0x00000002 // FILE_WRITE_DATA
		writeDAC  = 0x00040000 // WRITE_DAC
		genRead   = 0x80000000 // GENERIC_READ
	)
	allow := func(sid string, mask uint32) aclEntry { return aclEntry{aceAccessAllowed, sid, mask} }
	deny := func(sid string, mask uint32) aclEntry { return aclEntry{aceAccessDenied, sid, mask} }
	ours := []aclEntry{allow(me, fullFile)} // createnew_windows.go: D:P(A;;FA;;;me)
	profile := []aclEntry{allow(sidLocalSystem, fullFile), allow(sidAdministrators, fullFile), allow(me, fullFile)}
	with := func(extra ...aclEntry) []aclEntry { return append(append([]aclEntry{}, ours...), extra...) }
	for _, tc := range []struct {
		name  string
		sec   fileSecurity
		want  aclVerdict
		wantN string // a word the refusal's message carries
	}{
		{"our own protected list", fileSecurity{owner: me, entries: ours}, aclOwnerOnly, ""},
		{"the profile's inherited list", fileSecurity{owner: me, entries: profile}, aclOwnerOnly, ""},
		{"owned by Administrators, allowing this user (elevated keygen)", fileSecurity{owner: sidAdministrators, entries: profile}, aclOwnerOnly, ""},
		{"owned by SYSTEM", fileSecurity{owner: sidLocalSystem, entries: ours}, aclOwnerOnly, ""},
		{"an empty list (only the owner's implicit rights)", fileSecurity{owner: me}, aclOwnerOnly, ""},
		{"deny-only entry for Everyone, owner allowed", fileSecurity{owner: me, entries: []aclEntry{deny(everyone, fullFile), allow(me, fullFile)}}, aclOwnerOnly, ""},
		{"every deny kind for Everyone", fileSecurity{owner: me, entries: with(
			aclEntry{aceAccessDeniedObject, "", fullFile}, aclEntry{aceAccessDeniedCallback, "", fullFile}, aclEntry{aceAccessDeniedCallbackObject, "", fullFile})}, aclOwnerOnly, ""},
		{"Everyone may read the attributes and the list", fileSecurity{owner: me, entries: with(allow(everyone, harmlessRights))}, aclOwnerOnly, ""},
		{"a callback entry for this user", fileSecurity{owner: me, entries: []aclEntry{{aceAccessAllowedCallback, me, fullFile}}}, aclOwnerOnly, ""},

		{"Everyone may read", fileSecurity{owner: me, entries: with(allow(everyone, readFile))}, aclOthersAllowed, "other users"},
		{"Users may read", fileSecurity{owner: me, entries: with(allow(users, readFile))}, aclOthersAllowed, "other users"},
		{"Authenticated Users may read", fileSecurity{owner: me, entries: with(allow(authUsers, readFile))}, aclOthersAllowed, "other users"},
		{"Everyone GENERIC_READ", fileSecurity{owner: me, entries: with(allow(everyone, genRead))}, aclOthersAllowed, "other users"},
		{"another user may write", fileSecurity{owner: me, entries: with(allow(other, writeData))}, aclOthersAllowed, "other users"},
		{"another user may change the list", fileSecurity{owner: me, entries: with(allow(other, writeDAC))}, aclOthersAllowed, "other users"},
		{"Everyone read before a later deny", fileSecurity{owner: me, entries: with(allow(everyone, readFile), deny(everyone, fullFile))}, aclOthersAllowed, "other users"},
		{"a callback entry for Everyone", fileSecurity{owner: me, entries: with(aclEntry{aceAccessAllowedCallback, everyone, readFile})}, aclOthersAllowed, "other users"},
		{"NULL list", fileSecurity{owner: me, nullDACL: true}, aclNoList, "no access list"},
		{"owned by another user", fileSecurity{owner: other, entries: ours}, aclBadOwner, "owned by another account"},
		{"owned by Everyone", fileSecurity{owner: everyone, entries: ours}, aclBadOwner, "owned by another account"},
		{"no owner", fileSecurity{entries: ours}, aclBadOwner, "owned by another account"},
		{"an allowed-object entry", fileSecurity{owner: me, entries: with(aclEntry{0x05, "", readFile})}, aclUnjudged, "cannot judge"},
		{"an allowed-callback-object entry", fileSecurity{owner: me, entries: with(aclEntry{0x0B, "", readFile})}, aclUnjudged, "cannot judge"},
		{"an allowed-compound entry", fileSecurity{owner: me, entries: with(aclEntry{0x04, "", readFile})}, aclUnjudged, "cannot judge"},
		{"an entry of a type not yet defined", fileSecurity{owner: me, entries: with(aclEntry{0x7F, me, 0})}, aclUnjudged, "cannot judge"},
		{"an allow entry whose SID was not read", fileSecurity{owner: me, entries: with(allow("", readFile))}, aclUnjudged, "cannot judge"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.sec.tokenUser = me
			got := judgeACL(tc.sec)
			if got != tc.want {
				t.Fatalf("judgeACL = %d, want %d", got, tc.want)
			}
			err := got.err("private key file")
			if tc.want == aclOwnerOnly {
				if err != nil {
					t.Fatalf("accepted file refused: %v", err)
				}
				return
			}
			if !errors.Is(err, amp.ErrName(ErrInsecureKeyFile)) || !strings.Contains(err.Error(), tc.wantN) {
				t.Fatalf("refusal: %v, want insecure_key_file saying %q", err, tc.wantN)
			}
			for _, sid := range []string{me, other, everyone, users, authUsers} {
				if strings.Contains(err.Error(), sid) {
					t.Errorf("the refusal echoes a SID read from the file: %v", err)
				}
			}
		})
	}
	// A token user that could not be read trusts only SYSTEM and
	// Administrators: this user's own entry is then another's.
	if v := judgeACL(fileSecurity{owner: me, entries: ours}); v != aclBadOwner {
		t.Errorf("no token user: %d, want aclBadOwner", v)
	}
	if v := judgeACL(fileSecurity{owner: sidLocalSystem, entries: ours}); v != aclOthersAllowed {
		t.Errorf("no token user, SYSTEM owner: %d, want aclOthersAllowed", v)
	}
}

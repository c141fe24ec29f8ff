package keyfile

// The judgement of a Windows file's security descriptor: whether a
// private key file (or a passphrase file) is its user's alone. It is pure,
// over values the Windows reader extracts from the open file's handle
// (acl_windows.go), so that its table runs on every system
// (docs/SPEC-DECISIONS.md, CLI-51). The rule is Win32-OpenSSH's for a
// private key (check_secure_file_permission in
// https://github.com/PowerShell/openssh-portable/blob/latestw_all/contrib/win32/win32compat/w32-sshfileperm.c):
// the owner is this user, SYSTEM or Administrators, and no allow entry
// names anyone else; stricter where that check passes over what it does
// not read (an allow entry of another layout refuses here) and where it
// asks the system (a member of Administrators is not trusted by name).

// Well-known SIDs ("Well-known SIDs", Microsoft Learn, Security and
// Identity): the two accounts besides the user that Win32-OpenSSH lets
// hold a private key file. Either can take any file over anyway.
const (
	sidLocalSystem    = "S-1-5-18"     // NT AUTHORITY\SYSTEM
	sidAdministrators = "S-1-5-32-544" // BUILTIN\Administrators
)

// ACE types (ACE_HEADER.AceType, winnt.h; [MS-DTYP] 2.4.4.1). An allowed
// and an allowed-callback entry have the same layout up to the SID (the
// callback's condition follows it), so both are read; the deny kinds
// grant nothing. Every other type in an access list is an entry this
// package does not read, which refuses the file.
const (
	aceAccessAllowed              = 0x00
	aceAccessDenied               = 0x01
	aceAccessDeniedObject         = 0x06
	aceAccessAllowedCallback      = 0x09
	aceAccessDeniedCallback       = 0x0A
	aceAccessDeniedCallbackObject = 0x0C
)

// harmlessRights are the access rights an allow entry may give another
// account without exposing the key: READ_CONTROL (read the security
// descriptor), SYNCHRONIZE and FILE_READ_ATTRIBUTES (winnt.h). Any other
// bit (reading or writing data or extended attributes, executing,
// deleting, WRITE_DAC, WRITE_OWNER, GENERIC_*, MAXIMUM_ALLOWED,
// ACCESS_SYSTEM_SECURITY, and bits no file right names) refuses the file.
const harmlessRights = 0x00020000 | 0x00100000 | 0x00000080

// aclEntry is one entry of a file's access list.
type aclEntry struct {
	kind uint8  // ACE_HEADER.AceType
	sid  string // the SID's string form; "" when not read (see kind)
	mask uint32 // ACCESS_MASK
}

// fileSecurity is what the judgement needs of a file's security
// descriptor and of the process reading it.
type fileSecurity struct {
	owner     string     // the file's owner SID; "" when it has none
	tokenUser string     // the user SID of this process's token
	nullDACL  bool       // no access list: everyone may do anything
	entries   []aclEntry // the access list's entries, in order
}

// aclVerdict is judgeACL's answer.
type aclVerdict int

const (
	// aclOwnerOnly: only this user, SYSTEM and Administrators may open
	// the file's data.
	aclOwnerOnly aclVerdict = iota
	// aclBadOwner: another account owns the file (and may rewrite its
	// access list whenever it likes).
	aclBadOwner
	// aclNoList: the file has a NULL access list: everyone may read and
	// write it.
	aclNoList
	// aclOthersAllowed: an entry allows another account more than
	// harmlessRights.
	aclOthersAllowed
	// aclUnjudged: an entry this package cannot read, which may allow
	// anyone anything.
	aclUnjudged
)

// judgeACL judges s: the owner must be this process's user, SYSTEM or
// Administrators; the access list must exist; and every allow entry that
// gives more than harmlessRights must name one of those three. Deny
// entries grant nothing and are passed over; an entry of any other type,
// or an allow entry whose SID was not read, is aclUnjudged. An empty
// token user (not read) trusts nobody but SYSTEM and Administrators.
func judgeACL(s fileSecurity) aclVerdict {
	trusted := func(sid string) bool {
		return sid != "" && (sid == s.tokenUser || sid == sidLocalSystem || sid == sidAdministrators)
	}
	if !trusted(s.owner) {
		return aclBadOwner
	}
	if s.nullDACL {
		return aclNoList
	}
	for _, e := range s.entries {
		switch e.kind {
		case aceAccessDenied, aceAccessDeniedObject, aceAccessDeniedCallback, aceAccessDeniedCallbackObject:
			continue
		case aceAccessAllowed, aceAccessAllowedCallback:
			if e.sid == "" {
				return aclUnjudged
			}
			if e.mask&^harmlessRights == 0 || trusted(e.sid) {
				continue
			}
			return aclOthersAllowed
		default:
			return aclUnjudged
		}
	}
	return aclOwnerOnly
}

// aclFix is the remedy every refusal of an access list ends with. It
// names the file as FILE: the path is not echoed.
const aclFix = "allow only your account (icacls FILE /inheritance:r /grant:r %USERNAME%:F, and /remove any other account it lists)"

// err returns the refusal of a file (what names it, as "private key
// file") judged v, or nil for aclOwnerOnly. No SID or account name read
// from the file is echoed: another user chose them.
func (v aclVerdict) err(what string) error {
	switch v {
	case aclOwnerOnly:
		return nil
	case aclBadOwner:
		return fail(ErrInsecureKeyFile, "%s is owned by another account than yours, SYSTEM or Administrators; make it yours (takeown /f FILE) and %s", what, aclFix)
	case aclNoList:
		return fail(ErrInsecureKeyFile, "%s has no access list, so every user may read and write it; %s", what, aclFix)
	case aclOthersAllowed:
		return fail(ErrInsecureKeyFile, "%s's access list lets other users read or write it; %s", what, aclFix)
	default:
		return fail(ErrInsecureKeyFile, "%s's access list holds an entry this tool cannot judge; %s", what, aclFix)
	}
}

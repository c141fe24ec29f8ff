//go:build windows

package keyfile

import (
	"os"
	"unsafe"

	"golang.org/x/sys/windows"
)

// createNew creates the file name for writing, exclusively (CREATE_NEW,
// never following a link: a file or a link at name is never opened,
// fs.ErrExist). Windows does not read mode as access rights (os.OpenFile
// only sets the read-only attribute when the owner may not write), and a
// file created without a security descriptor takes the inheritable
// entries of its folder's access list: a private key's temporary file in
// a folder others may read (C:\ProgramData, a share, a profile whose
// access list was widened) was readable by them from its creation, and so
// was the key file it became (a hard link, or a rename, keeps the file's
// security descriptor). A file whose mode gives group and others nothing
// (a private key, 0600) is created with its access list already set:
// protected (nothing inherited from the folder) and granting all access
// to this process's user alone (docs/SPEC-DECISIONS.md, CLI-45). A public
// key file (0644) keeps the folder's access list, as a file created by
// any other tool there would.
func createNew(name string, mode os.FileMode) (*os.File, error) {
	if mode.Perm()&0o077 != 0 {
		return os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	}
	sa, err := ownerOnly()
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: name, Err: err}
	}
	p, err := windows.UTF16PtrFromString(name)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: name, Err: err}
	}
	h, err := windows.CreateFile(p, windows.GENERIC_WRITE,
		windows.FILE_SHARE_READ|windows.FILE_SHARE_WRITE|windows.FILE_SHARE_DELETE, sa,
		windows.CREATE_NEW, windows.FILE_ATTRIBUTE_NORMAL|windows.FILE_FLAG_OPEN_REPARSE_POINT, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: name, Err: err}
	}
	return os.NewFile(uintptr(h), name), nil
}

// ownerOnly returns the security attributes of a private key's file: a
// protected access list ("P": no entry inherited from the folder) with one
// entry, all file access ("FA") allowed to the user of this process's
// token.
func ownerOnly() (*windows.SecurityAttributes, error) {
	u, err := windows.GetCurrentProcessToken().GetTokenUser()
	if err != nil {
		return nil, err
	}
	sd, err := windows.SecurityDescriptorFromString("D:P(A;;FA;;;" + u.User.Sid.String() + ")")
	if err != nil {
		return nil, err
	}
	return &windows.SecurityAttributes{Length: uint32(unsafe.Sizeof(windows.SecurityAttributes{})), SecurityDescriptor: sd}, nil
}

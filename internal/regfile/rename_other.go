//go:build !linux && !darwin

package regfile

// renameNew: here there is no exclusive rename, so out is checked, then
// tmp renamed (checkRename).
func renameNew(tmp, out string) error { return checkRename(tmp, out) }

//go:build linux

package regfile

import "testing"

// TestWithoutProcNodeIsNeverOpened: where /proc is not mounted (a chroot,
// a minimal container) Open falls back to examining the name, then
// opening it: a node already in the file's place is still refused unopened
// and a regular file is still read.
func TestWithoutProcNodeIsNeverOpened(t *testing.T) {
	old := procFD
	procFD = t.TempDir() + "/absent/"
	t.Cleanup(func() { procFD = old })
	TestNodeInARegularFilesPlaceIsNeverOpened(t)
	TestRegularFileIsOpened(t)
}

// TestWithoutProcOpenStreamNeverOpensADevice: OpenStream's fallback
// without /proc still refuses a device and reads a file or a pipe.
func TestWithoutProcOpenStreamNeverOpensADevice(t *testing.T) {
	old := procFD
	procFD = t.TempDir() + "/absent/"
	t.Cleanup(func() { procFD = old })
	TestOpenStreamOpensAFileOrAPipeAndNeverADevice(t)
}

//go:build linux

package regfile

import (
	"io/fs"
	"os"
	"testing"
)

// viaProc are the exported openers with /proc/self/fd at proc (a
// folder of the test's) instead of procSelfFD.
func viaProc(proc string) openers {
	return openers{
		open: func(path string, links Links) (*os.File, fs.FileInfo, error) { return openVia(path, links, proc) },
		openIn: func(root *os.Root, name string) (*os.File, fs.FileInfo, error) {
			return openPlace(rootPlace{root, name}, proc)
		},
		openStream: func(path string) (*os.File, fs.FileInfo, error) { return openStream(path, proc) },
	}
}

// TestWithoutProcNodeIsNeverOpened: where /proc is not mounted (a chroot,
// a minimal container) Open falls back to examining the name, then
// opening it: a node already in the file's place is still refused unopened
// and a regular file is still read.
func TestWithoutProcNodeIsNeverOpened(t *testing.T) {
	o := viaProc(t.TempDir() + "/absent/")
	nodeInARegularFilesPlaceIsNeverOpened(t, o)
	regularFileIsOpened(t, o)
}

// TestWithoutProcOpenStreamNeverOpensADevice: OpenStream's fallback
// without /proc still refuses a device and reads a file or a pipe.
func TestWithoutProcOpenStreamNeverOpensADevice(t *testing.T) {
	openStreamOpensAFileOrAPipeAndNeverADevice(t, viaProc(t.TempDir()+"/absent/"))
}

//go:build !linux

package regfile

import (
	"io/fs"
	"os"
)

// openPlace: here there is no descriptor that opens nothing (O_PATH), so
// the name is examined, then opened (openByName); there is no proc.
func openPlace(p place, _ string) (*os.File, fs.FileInfo, error) { return openByName(p) }

// openStream: here there is no descriptor that opens nothing (O_PATH), so
// the name is examined, then opened (openStreamByName).
func openStream(path, proc string) (*os.File, fs.FileInfo, error) {
	return openStreamByName(path, proc)
}

//go:build !linux

package regfile

import (
	"io/fs"
	"os"
)

// openPlace: here there is no descriptor that opens nothing (O_PATH), so
// the name is examined, then opened (openByName).
func openPlace(p place) (*os.File, fs.FileInfo, error) { return openByName(p) }

// openStream: here there is no descriptor that opens nothing (O_PATH), so
// the name is examined, then opened (openStreamByName).
func openStream(path string) (*os.File, fs.FileInfo, error) { return openStreamByName(path) }

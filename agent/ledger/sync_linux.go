package ledger

import (
	"os"
	"syscall"
)

// fdatasync flushes f's data (and the metadata needed to read it back,
// such as its size) to the device.
func fdatasync(f *os.File) error {
	for {
		err := syscall.Fdatasync(int(f.Fd()))
		if err != syscall.EINTR {
			return err
		}
	}
}

package main

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// serveFUSE answers the FUSE requests read from dev (protocol 7.31, the
// kernel's uapi header linux/fuse.h) as a daemon that claims root owns
// everything: INIT, GETATTR (a folder of root's, mode 0755), STATFS;
// LOOKUP finds nothing; anything else is ENOSYS. It returns once dev
// is closed or the mount gone.
func serveFUSE(dev int) {
	le := binary.LittleEndian
	buf := make([]byte, 1<<17)
	for {
		n, err := unix.Read(dev, buf)
		if err != nil {
			if errors.Is(err, unix.EINTR) || errors.Is(err, unix.ENOENT) {
				continue
			}
			return
		}
		if n < 40 {
			continue
		}
		opcode, unique := le.Uint32(buf[4:]), le.Uint64(buf[8:])
		var body []byte
		errno := int32(0)
		switch opcode {
		case 26: // INIT: fuse_init_out
			body = make([]byte, 64)
			le.PutUint32(body[0:], 7)
			le.PutUint32(body[4:], 31)
			le.PutUint32(body[20:], 4096) // max_write
		case 3: // GETATTR: fuse_attr_out
			body = make([]byte, 104)
			le.PutUint64(body[16:], 1)                     // ino
			le.PutUint32(body[16+60:], unix.S_IFDIR|0o755) // mode
			le.PutUint32(body[16+64:], 2)                  // nlink
			le.PutUint32(body[16+80:], 4096)               // blksize
		case 17: // STATFS: fuse_statfs_out
			body = make([]byte, 80)
			le.PutUint32(body[40:], 4096)
			le.PutUint32(body[44:], 255)
		case 1: // LOOKUP
			errno = -int32(unix.ENOENT)
		case 2, 38: // FORGET, BATCH_FORGET: no answer
			continue
		default:
			errno = -int32(unix.ENOSYS)
		}
		out := make([]byte, 16+len(body))
		le.PutUint32(out[0:], uint32(len(out)))
		le.PutUint32(out[4:], uint32(errno))
		le.PutUint64(out[8:], unique)
		copy(out[16:], body)
		unix.Write(dev, out)
	}
}

// TestHandlerProgramOnAnotherUsersRealFUSEMountIsRefused is
// TestHandlerProgramOnAnotherUsersFUSEMountIsRefused with a FUSE file
// system the kernel mounts, its daemon in the test, claiming root owns
// its folders (mode 0755): the statfs and mountinfo reading of
// fuseMountOf is the kernel's, not a stand-in. Mounting needs root
// (CAP_SYS_ADMIN) and /dev/fuse; the mount says which user made it
// (user_id), as fusermount says for a user's mount (CLI-73).
func TestHandlerProgramOnAnotherUsersRealFUSEMountIsRefused(t *testing.T) {
	other := strconv.Itoa(os.Geteuid() + 1)
	for _, tc := range []struct {
		user   string
		refuse bool
	}{{other, true}, {"0", false}} {
		t.Run("user_id="+tc.user, func(t *testing.T) {
			dev, err := unix.Open("/dev/fuse", unix.O_RDWR|unix.O_CLOEXEC, 0)
			if err != nil {
				t.Skipf("no /dev/fuse to open: %v", err)
			}
			defer unix.Close(dev)
			dir := filepath.Join(t.TempDir(), "fuse")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			opts := "fd=" + strconv.Itoa(dev) + ",rootmode=40000,user_id=" + tc.user + ",group_id=0,allow_other"
			if err := unix.Mount("amptest", dir, "fuse.amptest", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
				if errors.Is(err, unix.EPERM) || errors.Is(err, unix.ENODEV) {
					t.Skipf("mounting a FUSE file system needs root (CAP_SYS_ADMIN) and the kernel's fuse: %v", err)
				}
				t.Fatal(err)
			}
			go serveFUSE(dev)
			defer unix.Unmount(dir, unix.MNT_DETACH)
			err = programWriters(hostMounts(), filepath.Join(dir, "prog"), nil, "/usr/bin:/bin")
			switch {
			case tc.refuse && (err == nil || !strings.Contains(err.Error(), "is on a FUSE file system that another user (uid "+other+") mounted")):
				t.Fatalf("a program on another user's FUSE mount, root's by its daemon's word, is not refused: %v", err)
			case !tc.refuse && err != nil:
				t.Fatalf("a program missing from root's FUSE mount is refused: %v", err)
			}
		})
	}
}

package main

import (
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"
)

// TestMountInfoOfALoadIsReadOncePerLoadNotPerLookup: each part of a
// handler's program judged on a FUSE file system (foreignFUSE), and each
// part on a read-only one whose mode group or others may write
// (readOnlyMount), looked its mount up by reading mountinfo again, up to
// maxMountInfo (8 MiB) each time: a load of three handlers, each program
// four folders deep, read it 18 times on root's FUSE mount and 15 times
// on a read-only image, and a load judges up to maxJudgedFiles files for
// each handler. Other users' FUSE mounts (fusermount, mount_max 1000 by
// default in /etc/fuse.conf) add their lines to it (threat: CPU and
// reads of each start and SIGHUP reload growing as lookups times the
// lines other users mount). Now a load reads the lines once, at its
// first lookup, and every later lookup reads that snapshot (onceLines,
// CLI-90); the verdicts are unchanged.
func TestMountInfoOfALoadIsReadOncePerLoadNotPerLookup(t *testing.T) {
	const handlers, depth = 3, 4
	for _, tc := range []struct {
		name     string
		mode     os.FileMode // of the programs' folders
		readOnly bool        // remount the folder read-only once written
		// setup makes the folder the programs lie under and returns
		// it, with the probe to load with and the mountinfo it reads.
		setup func(t *testing.T, base string) (dir string, m mountProbe, open func() (io.ReadCloser, error))
	}{
		{"programs on root's FUSE mount", 0o755, false, func(t *testing.T, base string) (string, mountProbe, func() (io.ReadCloser, error)) {
			fuse := filepath.Join(base, "fuse")
			mkdir(t, fuse, 0o755)
			hostInfo, err := os.ReadFile("/proc/self/mountinfo")
			if err != nil {
				t.Skipf("no mountinfo to read: %v", err)
			}
			info := string(hostInfo) + strconv.FormatUint(fuseMountID, 10) + " 29 0:999 / " + fuse + " rw,nosuid,nodev - fuse.amptest amptest rw,user_id=0,group_id=0,allow_other\n"
			m := fuseProbe(t, base, fuse, info)
			m.mountID = func(at string) (uint64, bool) {
				if under(at, fuse) {
					return fuseMountID, true
				}
				return statxMountID(at)
			}
			return fuse, m, func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(info)), nil }
		}},
		{"programs on a read-only image, its folders 0777", 0o777, true, func(t *testing.T, base string) (string, mountProbe, func() (io.ReadCloser, error)) {
			img := mountTmpfs(t, base, "image")
			return img, hostMounts(), func() (io.ReadCloser, error) { return os.Open("/proc/self/mountinfo") }
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := t.TempDir()
			dir, m, open := tc.setup(t, base)
			cfg := map[string]any{}
			for h := range handlers {
				d := filepath.Join(dir, "h"+strconv.Itoa(h))
				mkdir(t, d, tc.mode)
				for range depth - 1 {
					d = filepath.Join(d, "d")
					mkdir(t, d, tc.mode)
				}
				p := filepath.Join(d, "prog")
				writeProgram(t, p, `{"ran":true}`)
				cfg["org.example.p"+strconv.Itoa(h)+":1.0.0"] = map[string]any{"command": []string{p}}
			}
			if tc.readOnly {
				if err := unix.Mount("", dir, "", unix.MS_REMOUNT|unix.MS_RDONLY, "mode=0777,size=1m"); err != nil {
					t.Fatal(err)
				}
			}
			var reads atomic.Int64
			m.mountInfo = onceLines(func() (io.ReadCloser, error) {
				reads.Add(1)
				return open()
			})
			cfgFile := writeConfig(t, map[string]any{"handlers": cfg})
			if _, err := serveConfigProbed(t, m, "--config", cfgFile); err != nil {
				t.Fatalf("the programs are refused: %v", err)
			}
			if n := reads.Load(); n != 1 {
				t.Fatalf("one load of %d handlers read mountinfo %d times, want once", handlers, n)
			}
		})
	}
}

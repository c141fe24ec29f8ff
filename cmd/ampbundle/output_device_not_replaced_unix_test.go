//go:build unix

package main

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// outputWriter is one writer of an -o FILE: it writes to out (with
// --force where the command has it and force is set) and returns the
// error name and message of a refusal, "" when it wrote.
type outputWriter struct {
	name  string
	write func(t *testing.T, out string, force bool) (name, message string)
}

// cliWriter is an outputWriter that runs the command args(out) with
// --json, adding --force when force is set and forceFlag says the
// command has it.
func cliWriter(name string, forceFlag bool, args func(out string) []string) outputWriter {
	return outputWriter{name, func(t *testing.T, out string, force bool) (string, string) {
		t.Helper()
		a := append(args(out), "--json")
		if force && forceFlag {
			a = append(a, "--force")
		}
		r := runCLI(t, nil, a...)
		if r.code == 0 {
			return "", ""
		}
		var doc struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		if json.Unmarshal([]byte(r.stdout), &doc) != nil || doc.Error.Code == "" {
			t.Fatalf("%s: exit %d, not an error document: %s %s", name, r.code, r.stdout, r.stderr)
		}
		return doc.Error.Code, doc.Error.Message
	}}
}

// outputWriters are the writers of docs/SPEC-DECISIONS.md CLI-100: build
// and revoke (writeAtomic, as sign, receipt, rotate and heartbeat),
// export and join (writeOutput), pull of a bundle (pullBundle) and of a
// statement (writePulled), each with deterministic bytes.
func outputWriters(t *testing.T) []outputWriter {
	t.Helper()
	key, pub := sampleKey(t, "example-publisher"), samplePub("example-publisher")
	db := storeWithSamples(t)
	layout := filepath.Join(t.TempDir(), "layout")
	mustRun(t, "push", sampleFile("translate"), "oci-layout:"+layout+":v1")
	parts := t.TempDir()
	var split struct {
		Index string `json:"index"`
	}
	mustJSON(t, &split, "split", bigTranslate(t), "--size", "64K", "--key", key, "--out-dir", parts)
	return []outputWriter{
		cliWriter("build", false, func(out string) []string {
			return []string{"build", filepath.Join(testdata, "translate"), "-o", out, "--key", key, "--created", "2026-11-01T00:00:00Z"}
		}),
		cliWriter("revoke", false, func(out string) []string {
			return []string{"revoke", "-o", out, "--scope", "org.example", "--revoke-bundle", translateID + "@1", "--key", key, "--created", "2026-11-22T00:00:00Z"}
		}),
		cliWriter("export", true, func(out string) []string {
			return []string{"export", translateID, "--db", db, "-o", out}
		}),
		cliWriter("join", true, func(out string) []string {
			return []string{"join", split.Index, parts, "-o", out, "--trust", pub}
		}),
		cliWriter("pull", true, func(out string) []string {
			return []string{"pull", "oci-layout:" + layout + ":v1", "-o", out}
		}),
		{"pull of a statement", func(t *testing.T, out string, _ bool) (string, string) {
			if err := writePulled([]byte(`{"statement":1}`), out, func(string) error { return nil }); err != nil {
				return errName(err), errMessage(err)
			}
			return "", ""
		}},
	}
}

// namesIn lists the entries of dir, sorted.
func namesIn(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names
}

// mknodIn makes the node name of kind (syscall.S_IFCHR, S_IFBLK) and
// device numbers major, minor in dir, as root only.
func mknodIn(t *testing.T, dir, name string, kind uint32, major, minor uint32) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("making a device node needs root")
	}
	p := filepath.Join(dir, name)
	if err := syscall.Mknod(p, kind|0o666, int(unix.Mkdev(major, minor))); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestOutputThatIsACharacterDeviceIsRefusedNotReplaced: the threat
// (docs/SPEC-DECISIONS.md CLI-100): as root, `ampbundle build --out
// /dev/null` renamed a temporary file over the device node. CLI-100 then
// wrote into any character device; the review of CLI-105 found that a
// link another user planted to /dev/null, /dev/full, a watchdog or a
// terminal made root's output vanish (exit 0, "wrote …") or go into the
// device. Now a character device, or a link to one, is io_error ("is not
// a regular file") before anything is written, also with --force: the
// node, or the link, stays as it was and nothing is left in its folder
// or the temporary folder. (-o /dev/null, the literal name, is a discard:
// TestOutputDevNullIsADiscard.) A device node of its own, made in the
// test's folder: the real /dev is never touched.
func TestOutputThatIsACharacterDeviceIsRefusedNotReplaced(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("making a device node needs root")
	}
	for _, w := range outputWriters(t) {
		for _, viaLink := range []bool{false, true} {
			for _, force := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s link=%v force=%v", w.name, viaLink, force), func(t *testing.T) {
					tmp := t.TempDir()
					t.Setenv("TMPDIR", tmp)
					dir := t.TempDir()
					out := mknodIn(t, dir, "null", syscall.S_IFCHR, 1, 3)
					if viaLink { // a planted link, the shape of /dev/stdout
						out = filepath.Join(dir, "stdout")
						if err := os.Symlink("null", out); err != nil {
							t.Fatal(err)
						}
					}
					before := namesIn(t, dir)
					if name, msg := w.write(t, out, force); name != "io_error" || !strings.Contains(msg, "is not a regular file") {
						t.Fatalf("%s to a character device (link %v, force %v): %q (%s), want io_error, not a regular file", w.name, viaLink, force, name, msg)
					}
					st, err := os.Lstat(filepath.Join(dir, "null"))
					if err != nil || st.Mode().Type() != fs.ModeDevice|fs.ModeCharDevice {
						t.Fatalf("the device node is now %v (%v), want a character device", st.Mode().Type(), err)
					}
					if st, err := os.Lstat(out); err != nil || viaLink && st.Mode().Type() != fs.ModeSymlink {
						t.Fatalf("the link to the device is now %v (%v)", st.Mode().Type(), err)
					}
					if after := namesIn(t, dir); strings.Join(after, ",") != strings.Join(before, ",") {
						t.Fatalf("the folder now holds %v, want %v", after, before)
					}
					if left := namesIn(t, tmp); len(left) != 0 {
						t.Fatalf("the temporary folder still holds %v", left)
					}
				})
			}
		}
	}
}

// TestOutputThatIsAFIFOWhoseHolderNeverReadsIsRefusedAtOnce: the review
// of CLI-105 found that a FIFO planted at the name, its read end held by
// a process that never reads, hung the command for ever (it was opened
// by name and written blocking, with no deadline). Now a FIFO is
// io_error at once, before anything is written, also with --force; the
// holder gets nothing and the FIFO stays.
func TestOutputThatIsAFIFOWhoseHolderNeverReadsIsRefusedAtOnce(t *testing.T) {
	for _, w := range outputWriters(t) {
		t.Run(w.name, func(t *testing.T) {
			t.Setenv("TMPDIR", t.TempDir())
			fifo := filepath.Join(t.TempDir(), "pipe")
			if err := syscall.Mkfifo(fifo, 0o600); err != nil {
				t.Fatal(err)
			}
			holder, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer holder.Close()
			type refusal struct{ name, msg string }
			done := make(chan refusal, 1)
			go func() {
				name, msg := w.write(t, fifo, true)
				done <- refusal{name, msg}
			}()
			select {
			case r := <-done:
				if r.name != "io_error" || !strings.Contains(r.msg, "is not a regular file") {
					t.Fatalf("%s to a FIFO whose holder never reads: %q (%s), want io_error, not a regular file", w.name, r.name, r.msg)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("%s to a FIFO whose holder never reads: still waiting after 10 s", w.name)
			}
			if n, _ := holder.Read(make([]byte, 1)); n != 0 {
				t.Fatal("the holder got bytes")
			}
			if st, err := os.Lstat(fifo); err != nil || st.Mode().Type() != fs.ModeNamedPipe {
				t.Fatalf("the FIFO is now %v (%v)", st.Mode().Type(), err)
			}
		})
	}
}

// TestOutputThatIsAFIFOWithoutAReaderFailsAtOnce: a named pipe that no
// process reads must neither be replaced (as it was) nor hang the
// command waiting for a reader that may never come: it is io_error (as
// every FIFO is since CLI-105, before anything is written), the FIFO
// stays, and nothing is left in its folder or the temporary folder.
func TestOutputThatIsAFIFOWithoutAReaderFailsAtOnce(t *testing.T) {
	for _, w := range outputWriters(t) {
		t.Run(w.name, func(t *testing.T) {
			tmp := t.TempDir()
			t.Setenv("TMPDIR", tmp)
			dir := t.TempDir()
			fifo := filepath.Join(dir, "pipe")
			if err := syscall.Mkfifo(fifo, 0o600); err != nil {
				t.Fatal(err)
			}
			if name, msg := w.write(t, fifo, true); name != "io_error" {
				t.Fatalf("%s to a FIFO without a reader: %q (%s), want io_error", w.name, name, msg)
			}
			if st, err := os.Lstat(fifo); err != nil || st.Mode().Type() != fs.ModeNamedPipe {
				t.Fatalf("the FIFO is now %v (%v)", st.Mode().Type(), err)
			}
			if got := namesIn(t, dir); len(got) != 1 {
				t.Fatalf("the folder now holds %v, want only the FIFO", got)
			}
			if left := namesIn(t, tmp); len(left) != 0 {
				t.Fatalf("the temporary folder still holds %v", left)
			}
		})
	}
}

// TestOutputThatIsAFolderSocketOrBlockDeviceIsRefusedAlsoWithForce: an
// -o FILE that is neither a regular file nor a node to write into was
// renamed over (a socket: an agent's admin socket replaced by a bundle;
// a block device node replaced by a regular file) or refused only after
// the whole output was written (a folder). Now it is io_error ("is not a
// regular file") before anything is written, also with --force, and the
// node stays as it was.
func TestOutputThatIsAFolderSocketOrBlockDeviceIsRefusedAlsoWithForce(t *testing.T) {
	nodes := []struct {
		kind string
		want fs.FileMode
		make func(t *testing.T, dir string) string
	}{
		{"folder", fs.ModeDir, func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "d")
			if err := os.Mkdir(p, 0o755); err != nil {
				t.Fatal(err)
			}
			return p
		}},
		{"socket", fs.ModeSocket, func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "s")
			l, err := net.Listen("unix", p)
			if err != nil {
				t.Skip("no unix socket here:", err)
			}
			l.(*net.UnixListener).SetUnlinkOnClose(false)
			t.Cleanup(func() { l.Close() })
			return p
		}},
		{"block device", fs.ModeDevice, func(t *testing.T, dir string) string {
			return mknodIn(t, dir, "b", syscall.S_IFBLK, 7, 250)
		}},
	}
	for _, w := range outputWriters(t) {
		for _, n := range nodes {
			t.Run(w.name+" "+n.kind, func(t *testing.T) {
				tmp := t.TempDir()
				t.Setenv("TMPDIR", tmp)
				dir := t.TempDir()
				out := n.make(t, dir)
				name, msg := w.write(t, out, true)
				if name != "io_error" || !strings.Contains(msg, "is not a regular file") {
					t.Fatalf("%s to a %s with --force: %q (%s), want io_error, not a regular file", w.name, n.kind, name, msg)
				}
				if st, err := os.Lstat(out); err != nil || st.Mode().Type() != n.want {
					t.Fatalf("the %s is now %v (%v)", n.kind, st.Mode().Type(), err)
				}
				if got := namesIn(t, dir); len(got) != 1 {
					t.Fatalf("the folder now holds %v, want only the %s", got, n.kind)
				}
				if left := namesIn(t, tmp); len(left) != 0 {
					t.Fatalf("the temporary folder still holds %v", left)
				}
			})
		}
	}
}

package regfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
)

// Output is what the name of an output holds before anything is written
// there (JudgeOutput; docs/SPEC-DECISIONS.md CLI-105).
type Output int

const (
	// OutputFile: nothing, or a regular file (links followed). The output
	// is written to a temporary file beside the name and renamed into
	// its place, as before; the name is judged again just before the
	// rename.
	OutputFile Output = iota
	// OutputOwn: a name standing for this process's stdout or stderr
	// (/dev/stdout, /dev/stderr, /dev/fd/1, /proc/self/fd/2,
	// /proc/<this pid>/fd/1, or a chain of links to one), whatever the
	// descriptor is (a pipe, a socket, a file, a terminal). The output is
	// written, once complete, through a duplicate of that descriptor
	// (OpenOutputStream), as `-o -` writes stdout; the name is never
	// opened again nor renamed over.
	OutputOwn
	// OutputDiscard: the literal name /dev/null (filepath.Clean of it).
	// The output is produced and checked complete and nothing is opened.
	OutputDiscard
)

// DevNull is the one name an output is discarded for (OutputDiscard).
const DevNull = "/dev/null"

// JudgeOutput is the one rule for the existing target of an output name
// (docs/SPEC-DECISIONS.md CLI-105, which amends CLI-100 and CLI-103):
// the literal name /dev/null is OutputDiscard; a name whose chain of
// links passes through a descriptor folder of the proc file system
// (descriptorOf) is OutputOwn when the descriptor is this process's
// stdout or stderr (streamFD), and ErrNotRegular when it is another of
// this process's or another process's (never opened: a link
// to /proc/PID/fd/N another user planted would reopen a file they cannot
// open); otherwise path is examined with links followed (os.Stat):
// nothing there, or a regular file, is OutputFile, and anything else (a
// character or block device, a FIFO, a socket, a folder) is
// ErrNotRegular, to be refused before anything is read, signed, built or
// written, also where the caller was asked to replace an existing
// output. Nothing is ever opened for writing through a name that is
// neither a regular file nor one of this process's descriptors. Other
// failures to examine path are the system's errors.
func JudgeOutput(path string) (Output, error) { return judgeOutput(path, streamFD) }

// judgeOutput is JudgeOutput, stream saying which of this process's
// descriptors an output may be written through.
func judgeOutput(path string, stream func(fd int) bool) (Output, error) {
	if runtime.GOOS != "windows" && filepath.Clean(path) == DevNull {
		return OutputDiscard, nil
	}
	if _, own, magic := ownDescriptorIn(path, stream); magic {
		if own {
			return OutputOwn, nil
		}
		return OutputFile, ErrNotRegular
	}
	st, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return OutputFile, nil
	}
	if err != nil {
		return OutputFile, err
	}
	if st.Mode().IsRegular() {
		return OutputFile, nil
	}
	return OutputFile, ErrNotRegular
}

// descriptorName reports whether path, as the user wrote it, names one
// of this process's descriptors: /dev/stdout (1), /dev/stderr (2),
// /dev/fd/N, /proc/self/fd/N, /proc/thread-self/fd/N or
// /proc/<this pid>/fd/N. Only such a name is written through
// (OutputOwn): a link of another's that leads there (a planted
// shared/out -> /dev/stdout) would send root's output, a publisher's
// bytes for pull, to its terminal or log (docs/SPEC-DECISIONS.md CLI-105).
func descriptorName(path string) (fd int, ok bool) {
	p := filepath.ToSlash(filepath.Clean(path))
	switch p {
	case "/dev/stdout":
		return 1, true
	case "/dev/stderr":
		return 2, true
	}
	for _, dir := range []string{"/dev/fd/", "/proc/self/fd/", "/proc/thread-self/fd/", "/proc/" + strconv.Itoa(os.Getpid()) + "/fd/"} {
		if n, found := strings.CutPrefix(p, dir); found {
			fd, err := strconv.Atoi(n)
			return fd, err == nil && fd >= 0 && strconv.Itoa(fd) == n
		}
	}
	return 0, false
}

// OwnDescriptor reports which of this process's descriptors the name
// path stands for (OutputOwn), if it stands for one.
func OwnDescriptor(path string) (fd int, ok bool) { return ownDescriptorOf(path, streamFD) }

// ownDescriptorOf is OwnDescriptor, stream as judgeOutput's.
func ownDescriptorOf(path string, stream func(fd int) bool) (fd int, ok bool) {
	fd, ok, _ = ownDescriptorIn(path, stream)
	return fd, ok
}

// ownDescriptorIn is the one rule of both: magic when path's chain of
// links reaches a descriptor of the proc file system (descriptorOf);
// own when, besides, the name the user gave is itself that descriptor's
// (descriptorName), it is this process's, and stream allows it.
func ownDescriptorIn(path string, stream func(fd int) bool) (fd int, own, magic bool) {
	pid, fd, magic := descriptorOf(path)
	if !magic {
		return 0, false, false
	}
	want, named := descriptorName(path)
	return fd, named && want == fd && pid == os.Getpid() && stream(fd), true
}

// streamFD reports whether fd is one an output may be written through:
// stdout or stderr alone. Another descriptor of this process is what the
// command opened itself (the store, a key, a lock), and a link to
// /proc/self/fd/N planted at an output name would send the output into
// it (docs/SPEC-DECISIONS.md CLI-105).
func streamFD(fd int) bool { return fd == 1 || fd == 2 }

// ErrNotStream is the refusal of OpenOutputStream for a name that does
// not stand for one of this process's own descriptors (any longer).
var ErrNotStream = errors.New("not one of this process's descriptors")

// OpenOutputStream returns, for a name JudgeOutput found OutputOwn, a
// duplicate of the descriptor of this process the name stands for:
// writes through it go where the descriptor's own offset and flags send
// them, as `-o -` writes stdout (a shell's `>` truncated a file, `>>`
// appends), whatever the descriptor is. Nothing is opened by name: a
// name that no longer stands for one of this process's descriptors is
// ErrNotStream.
func OpenOutputStream(path string) (*os.File, error) { return openOutputStream(path, streamFD) }

// openOutputStream is OpenOutputStream, stream as judgeOutput's.
func openOutputStream(path string, stream func(fd int) bool) (*os.File, error) {
	fd, ok := ownDescriptorOf(path, stream)
	if !ok {
		return nil, ErrNotStream
	}
	return ownDescriptor(path, fd)
}

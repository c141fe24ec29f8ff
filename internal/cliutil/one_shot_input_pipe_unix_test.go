//go:build unix

package cliutil

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
)

// oneShotReaders are the one-shot readers of a named input: ReadFile
// (--to-doc, --did-doc, TLS and CA files, receipts, trust policies,
// revoke --after) and ReadInput (msg inspect, msg verify, invoke
// --params @FILE), each giving a pipe wait (PipeWait in production, a
// test's own here) to end.
var oneShotReaders = []struct {
	name string
	read func(path string, max int64, wait time.Duration) ([]byte, error)
}{
	{"ReadFile", func(p string, max int64, wait time.Duration) ([]byte, error) {
		return readFileChecked(p, max, "did document", nil, wait)
	}},
	{"ReadInput", func(p string, max int64, wait time.Duration) ([]byte, error) {
		return readInput(&Env{}, p, max, false, wait)
	}},
}

// readWithin runs read(path) and fails the test when it has not returned
// within limit; release is then called to let the stuck reader go.
func readWithin(t *testing.T, limit time.Duration, read func() ([]byte, error), release func()) ([]byte, error) {
	t.Helper()
	type res struct {
		data []byte
		err  error
	}
	done := make(chan res, 1)
	go func() {
		d, err := read()
		done <- res{d, err}
	}()
	select {
	case r := <-done:
		return r.data, r.err
	case <-time.After(limit):
		release()
		<-done
		t.Fatalf("the reader waited more than %s", limit)
		return nil, nil
	}
}

// releaseFIFO lets a reader blocked in the open of fifo go: a writer
// joins and leaves.
func releaseFIFO(fifo string) func() {
	return func() {
		if w, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			w.Close()
		}
	}
}

// TestOneShotInputFIFOThatNeverEndsIsNotWaitedOnForEver
//
// Attack (whoever can write the folder a message, a DID document or a
// params file is read from): a FIFO is put where the file is. The
// readers opened it with os.Open, which waits for a writer: with none
// (msg inspect, msg verify, invoke --params @FILE, query --to-doc, serve's
// TLS files) the command hung for ever, without output; with a writer
// that trickles a byte now and then and never closes, it hung as long as
// the writer liked.
//
// Defence: a pipe named as an input must end within PipeWait, its open
// included (io_error, saying so; "-" is read without a bound).
func TestOneShotInputFIFOThatNeverEndsIsNotWaitedOnForEver(t *testing.T) {
	const wait = 300 * time.Millisecond
	for _, r := range oneShotReaders {
		for _, trickle := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s trickle=%v", r.name, trickle), func(t *testing.T) {
				fifo := filepath.Join(t.TempDir(), "msg.cbor")
				if err := syscall.Mkfifo(fifo, 0o600); err != nil {
					t.Skipf("no FIFO here: %v", err)
				}
				stop := make(chan struct{})
				var once sync.Once
				release := func() { once.Do(func() { close(stop) }); releaseFIFO(fifo)() }
				defer release()
				if trickle {
					go func() {
						w, err := os.OpenFile(fifo, os.O_WRONLY, 0) // waits for the reader
						if err != nil {
							return
						}
						defer w.Close()
						for {
							select {
							case <-stop:
								return
							case <-time.After(50 * time.Millisecond):
								if _, err := w.Write([]byte("{")); err != nil {
									return
								}
							}
						}
					}()
				}
				// The reader left waiting in the open or a read goes when
				// the trickle stops or a writer joins and leaves (release).
				_, err := readWithin(t, 10*time.Second, func() ([]byte, error) { return r.read(fifo, 1<<20, wait) }, release)
				// A FIFO no one opens for writing never opens; one a
				// writer trickles into opens and never ends.
				want := "did not end within"
				if !trickle {
					want = "did not open within"
				}
				if !errors.Is(err, amp.ErrName("io_error")) || !strings.Contains(err.Error(), want) {
					t.Fatalf("a FIFO that never ends: %v, want io_error (%s)", err, want)
				}
			})
		}
	}
}

// TestOneShotInputDeviceIsNeverOpened: a device node put where an input
// file is was opened (its driver run) and read: /dev/null as an empty
// message or DID document, /dev/zero up to the size bound. It is now
// io_error, never opened.
func TestOneShotInputDeviceIsNeverOpened(t *testing.T) {
	for _, r := range oneShotReaders {
		for _, dev := range []string{"/dev/null", "/dev/zero"} {
			if _, err := os.Stat(dev); err != nil {
				t.Skipf("no %s here", dev)
			}
			_, err := r.read(dev, 1<<10, PipeWait)
			if !errors.Is(err, amp.ErrName("io_error")) || !strings.Contains(err.Error(), "not a regular file or a pipe") {
				t.Errorf("%s of %s: %v, want io_error (not a regular file or a pipe)", r.name, dev, err)
			}
		}
	}
}

// TestOneShotInputPipeIsReadWithinItsBounds: what the bound must not
// break. A process substitution (<(…): /dev/fd/N, a pipe whose writer is
// there), a named FIFO whose writer comes a little after the reader, and
// a regular file are read whole; an endless pipe is cut at the size
// bound (limit_exceeded), not read into memory.
func TestOneShotInputPipeIsReadWithinItsBounds(t *testing.T) {
	const wait = 5 * time.Second
	want := `{"id":"did:key:z6Mk"}`
	for _, r := range oneShotReaders {
		t.Run(r.name+" process substitution", func(t *testing.T) {
			pr, pw, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer pr.Close()
			go func() { pw.WriteString(want); pw.Close() }()
			path := fmt.Sprintf("/dev/fd/%d", pr.Fd())
			if _, err := os.Stat(path); err != nil {
				t.Skipf("no /dev/fd here: %v", err)
			}
			got, err := readWithin(t, 10*time.Second, func() ([]byte, error) { return r.read(path, 1<<20, wait) }, func() {})
			if err != nil || string(got) != want {
				t.Fatalf("got %q, %v; want %q", got, err, want)
			}
		})
		t.Run(r.name+" FIFO, writer after the reader", func(t *testing.T) {
			fifo := filepath.Join(t.TempDir(), "doc.json")
			if err := syscall.Mkfifo(fifo, 0o600); err != nil {
				t.Skipf("no FIFO here: %v", err)
			}
			go func() {
				time.Sleep(100 * time.Millisecond)
				if w, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
					w.WriteString(want)
					w.Close()
				}
			}()
			got, err := readWithin(t, 10*time.Second, func() ([]byte, error) { return r.read(fifo, 1<<20, wait) }, releaseFIFO(fifo))
			if err != nil || string(got) != want {
				t.Fatalf("got %q, %v; want %q", got, err, want)
			}
		})
		t.Run(r.name+" regular file", func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "doc.json")
			if err := os.WriteFile(p, []byte(want), 0o600); err != nil {
				t.Fatal(err)
			}
			if got, err := r.read(p, 1<<20, wait); err != nil || string(got) != want {
				t.Fatalf("got %q, %v; want %q", got, err, want)
			}
		})
		t.Run(r.name+" endless pipe", func(t *testing.T) {
			pr, pw, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer pr.Close()
			go func() {
				defer pw.Close()
				buf := make([]byte, 4096)
				for {
					if _, err := pw.Write(buf); err != nil {
						return
					}
				}
			}()
			path := fmt.Sprintf("/dev/fd/%d", pr.Fd())
			if _, err := os.Stat(path); err != nil {
				t.Skipf("no /dev/fd here: %v", err)
			}
			_, err = readWithin(t, 10*time.Second, func() ([]byte, error) { return r.read(path, 1<<10, wait) }, func() {})
			if !errors.Is(err, amp.ErrName("limit_exceeded")) {
				t.Fatalf("an endless pipe: %v, want limit_exceeded", err)
			}
		})
	}
}

// TestOneShotInputNamingTheCommandsOwnStdinIsReadAsDash: /dev/stdin or
// /dev/fd/0 on a socket (a socket-activated or inetd-style run) or a
// terminal names the command's own standard input, which the device rule
// refused though `-` read it: such a name is read as `-` is, while
// another socket or device is still refused unopened (CLI-57).
func TestOneShotInputNamingTheCommandsOwnStdinIsReadAsDash(t *testing.T) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	in, peer := os.NewFile(uintptr(fds[0]), "stdin"), os.NewFile(uintptr(fds[1]), "peer")
	defer in.Close()
	if _, err := peer.Write([]byte("a0")); err != nil {
		t.Fatal(err)
	}
	peer.Close()
	name := fmt.Sprintf("/dev/fd/%d", in.Fd())
	got, err := ReadInput(&Env{Stdin: in}, name, 1<<10, true)
	if err != nil || !bytes.Equal(got, []byte{0xa0}) {
		t.Fatalf("the command's own stdin named %s: %x, %v; want a0 as with -", name, got, err)
	}
	// The same socket named while stdin is something else: a device.
	other, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := ReadInput(&Env{Stdin: other}, name, 1<<10, true); !errors.Is(err, amp.ErrName("io_error")) {
		t.Fatalf("a socket that is not stdin: %v, want io_error", err)
	}
}

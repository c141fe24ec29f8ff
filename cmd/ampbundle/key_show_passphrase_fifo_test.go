//go:build unix

package main

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestKeyShowAndPassphraseFileFIFODoNotHang: a local attacker who
// can write the folder puts a FIFO where the key file `key show` reads, or
// where the --passphrase-file of an encrypted key was. Both were
// opened with a blocking open(2): the command waited forever for a writer
// instead of failing. Each is refused at once as not a regular file
// (key_unreadable; docs/SPEC-DECISIONS.md, CLI-29). 4 s is far beyond what refusing a file takes.
func TestKeyShowAndPassphraseFileFIFODoNotHang(t *testing.T) {
	dir := t.TempDir()
	pass := filepath.Join(dir, "pass")
	if err := os.WriteFile(pass, []byte("correct horse\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	key := filepath.Join(dir, "k.pem")
	if r := runCLI(t, nil, "keygen", "-o", key, "--encrypt", "--passphrase-file", pass); r.code != 0 {
		t.Fatalf("keygen: %d %s %s", r.code, r.stdout, r.stderr)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"key show of a FIFO", []string{"key", "show", "--json", fifo}},
		{"passphrase file that is a FIFO", []string{"key", "show", "--json", "--passphrase-file", fifo, key}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			done := make(chan result, 1)
			go func() { done <- runCLI(t, nil, tc.args...) }()
			select {
			case r := <-done:
				if r.code != 1 || errorCode(t, r) != "key_unreadable" {
					t.Fatalf("exit %d: %s %s; want key_unreadable", r.code, r.stdout, r.stderr)
				}
			case <-time.After(20 * time.Second): // a hang guard: a FIFO's open waits for a writer forever
				unblockFIFO(fifo, done)
				t.Fatal("the command hangs on a FIFO until something writes to it")
			}
		})
	}
}

// unblockFIFO lets a reader blocked on opening fifo go (again and again, for a
// reader that opens it more than once) until done has a value, which it
// puts back.
func unblockFIFO[T any](fifo string, done chan T) {
	for {
		if w, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			w.Close()
		}
		select {
		case v := <-done:
			done <- v
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
}

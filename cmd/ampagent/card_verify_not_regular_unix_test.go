//go:build unix

package main

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestCardVerifyOfAFIFOOrDeviceIsRefusedAtOnce: attack: a peer's A2A
// card comes on a medium or into a shared folder, and whoever can write
// there puts a FIFO (or a device node) where the card file is. 'card
// verify' opened the name with os.Open, which waits for a writer on a
// FIFO: the check hung for ever, and a device's driver ran (/dev/null
// read as an empty card, card_malformed). The card is opened as key and
// config files are (regfile.Open): anything but a regular file is
// io_error at once, never opened.
func TestCardVerifyOfAFIFOOrDeviceIsRefusedAtOnce(t *testing.T) {
	_, did := keygen(t, t.TempDir(), "agent.key")
	fifo := filepath.Join(t.TempDir(), "card.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, path string }{
		{"FIFO", fifo},
		{"device", os.DevNull},
	} {
		done := make(chan result, 1)
		go func() { done <- runCLI(t, "", "card", "verify", tc.path, "--key", did, "--json") }()
		select {
		case r := <-done:
			if code, _ := errorDoc(t, r); r.code != 1 || code != "io_error" {
				t.Fatalf("%s: exit %d, code %s, want 1 io_error", tc.name, r.code, code)
			}
		case <-time.After(10 * time.Second):
			// Let the blocked open go: a writer joins and leaves.
			if w, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
				w.Close()
			}
			<-done
			t.Fatalf("%s: card verify waited for a writer", tc.name)
		}
	}
}

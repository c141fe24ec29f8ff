//go:build unix

package main

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMCPTokenFileFIFOIsRefusedAtOnce: attack: a FIFO is put where
// --mcp-token-file points (a folder the agent's user shares with a
// script, a mistaken path). os.Open of a FIFO waits for a writer: the
// agent's start hung, and a SIGHUP reload hung for good without a log
// line, so a token the operator had removed from the file stayed valid.
// The token file is opened as key files are (regfile.Open): what the path
// leads to is examined first and a FIFO refused at once, never opened.
func TestMCPTokenFileFIFOIsRefusedAtOnce(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "tokens")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := readMCPTokens(fifo, false)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Fatalf("readMCPTokens of a FIFO: %v, want it refused as not a regular file", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("readMCPTokens of a FIFO waited for a writer")
	}
}

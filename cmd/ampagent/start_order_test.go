//go:build unix

package main

import (
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A refused start leaves no file (docs/SPEC-DECISIONS.md CLI-11): the
// refusals that come only once something is opened (a port another
// process holds, an admin socket that cannot be made) come before the
// ledger is opened or migrated and the spool cleared, so they too leave
// the store's folder and the stream directory as they were.

// busyAddr holds a loopback port for the test and returns its address.
func busyAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln.Addr().String()
}

// TestStartRefusedAtAListenerOrSocketLeavesNoLedgerFile: serve and
// mcp refused because a port is taken or the admin socket cannot be
// created leave no DB.ledger.wal (or .lock) beside the store (threat: a
// refused start that leaves the traces of an agent that ran, which CLI-11
// promises never happens).
func TestStartRefusedAtAListenerOrSocketLeavesNoLedgerFile(t *testing.T) {
	noDir := filepath.Join(t.TempDir(), "missing", "admin.sock")
	tokens := writeFile(t, "tokens", "did:web:a.example.org tok-0123456789abcdef0123456789abcdef\n")
	for _, tc := range []struct {
		name string
		mcp  bool // also run `ampagent mcp` with args
		args []string
	}{
		{"--listen on a port in use", false, []string{"--listen", busyAddr(t)}},
		{"--metrics-listen on a port in use", false, []string{"--listen", "127.0.0.1:0", "--metrics-listen", busyAddr(t)}},
		{"--listen-tcp on a port in use", false, []string{"--listen", "127.0.0.1:0", "--listen-tcp", busyAddr(t)}},
		{"--mcp-listen on a port in use", false, []string{"--listen", "127.0.0.1:0", "--mcp-listen", busyAddr(t), "--mcp-token-file", tokens}},
		{"--admin-socket in a missing folder", true, []string{"--admin-socket", noDir}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db, key := serveStore(t)
			before := storeDirEntries(t, db)
			args := append([]string{"--db", db, "--key", key, "--allow", "*=org.example."}, tc.args...)
			if tc.mcp {
				args = append(args, "--listen", "127.0.0.1:0")
			}
			r := serveRefusal(t, args...)
			if r.code == 0 {
				t.Fatalf("serve exited 0: %s", r.stderr)
			}
			if after := storeDirEntries(t, db); !slices.Equal(before, after) {
				t.Errorf("serve refused (exit %d) but left files: before %v, after %v\n%s", r.code, before, after, r.stderr)
			}
			if !tc.mcp {
				return
			}
			r = runCLI(t, "", append([]string{"mcp", "--db", db, "--key", key}, tc.args...)...)
			if r.code == 0 {
				t.Fatalf("mcp exited 0: %s", r.stderr)
			}
			if after := storeDirEntries(t, db); !slices.Equal(before, after) {
				t.Errorf("mcp refused (exit %d) but left files: before %v, after %v\n%s", r.code, before, after, r.stderr)
			}
		})
	}
}

// TestStartRefusedAtAListenerKeepsLeftSpoolFiles: the spool files a
// previous run left in --stream-dir are removed only by a start that
// passed every check (stream.go removeLeftSpool, CLI-11); a serve refused
// because its port is taken leaves them as they were (threat: a refused
// start that still deletes files, e.g. the evidence of the run that died
// with streams open).
func TestStartRefusedAtAListenerKeepsLeftSpoolFiles(t *testing.T) {
	db, key := serveStore(t)
	streams := t.TempDir()
	left := filepath.Join(streams, "ampstream-left-by-a-crash")
	if err := os.WriteFile(left, []byte("spooled"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := serveRefusal(t, "--db", db, "--key", key, "--allow", "*=org.example.", "--stream-dir", streams, "--listen", busyAddr(t))
	if r.code == 0 {
		t.Fatalf("serve exited 0: %s", r.stderr)
	}
	if _, err := os.Stat(left); err != nil {
		t.Errorf("serve refused (exit %d) but removed the spool file a previous run left: %v\n%s", r.code, err, r.stderr)
	}
}

// TestStartRefusedAtAListenerDoesNotMigrateTheLedger: the one-way
// migration of a bbolt ledger to the write-ahead log is made only by a
// start that passed every check; a serve refused because its port is
// taken leaves DB.ledger in place and writes no DB.ledger.wal and no
// DB.ledger.migrated-DATE (threat: a refused start that makes a one-way
// change an operator never agreed to, e.g. while an older agent binary is
// still meant to run on that ledger).
func TestStartRefusedAtAListenerDoesNotMigrateTheLedger(t *testing.T) {
	db, key := serveStore(t)
	old, err := os.ReadFile(oldBoltLedger(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(db+".ledger", old, 0o600); err != nil {
		t.Fatal(err)
	}
	before := storeDirEntries(t, db)
	r := serveRefusal(t, "--db", db, "--key", key, "--allow", "*=org.example.", "--listen", busyAddr(t))
	if r.code == 0 {
		t.Fatalf("serve exited 0: %s", r.stderr)
	}
	if after := storeDirEntries(t, db); !slices.Equal(before, after) {
		t.Errorf("serve refused (exit %d) but migrated the ledger: before %v, after %v\n%s", r.code, before, after, r.stderr)
	}
}

// freeAddr is a loopback address no listener holds at the time of the
// call (its port was just released).
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// TestStartRefusedAtTheLedgerReleasesEveryBoundSocket: a start refused at
// the ledger (damaged), after every socket was bound, releases them all
// and removes the admin socket it made (threat: a refused start that
// keeps ports taken, or leaves a socket file behind, so that the next
// start is refused as "in use").
func TestStartRefusedAtTheLedgerReleasesEveryBoundSocket(t *testing.T) {
	db, key := serveStore(t)
	damaged := damagedLedger(t)
	tokens := writeFile(t, "tokens", "did:web:a.example.org tok-0123456789abcdef0123456789abcdef\n")
	sock := filepath.Join(t.TempDir(), "admin.sock")
	addrs := map[string]string{"--listen": freeAddr(t), "--metrics-listen": freeAddr(t), "--listen-tcp": freeAddr(t), "--mcp-listen": freeAddr(t)}
	args := []string{"--db", db, "--key", key, "--allow", "*=org.example.", "--ledger", damaged, "--admin-socket", sock, "--mcp-token-file", tokens}
	for flag, addr := range addrs {
		args = append(args, flag, addr)
	}
	r := serveRefusal(t, args...)
	if r.code == 0 || !strings.Contains(r.stderr, "ledger file is damaged") {
		t.Fatalf("serve was not refused at the ledger (exit %d): %s", r.code, r.stderr)
	}
	for flag, addr := range addrs {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Errorf("%s %s still held after the refused start: %v", flag, addr, err)
			continue
		}
		ln.Close()
	}
	if _, err := os.Lstat(sock); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("serve refused but left its admin socket %s: %v", sock, err)
	}
	r = runCLI(t, "", "mcp", "--db", db, "--key", key, "--ledger", damaged, "--admin-socket", sock)
	if r.code == 0 || !strings.Contains(r.stderr, "ledger file is damaged") {
		t.Fatalf("mcp was not refused at the ledger (exit %d): %s", r.code, r.stderr)
	}
	if _, err := os.Lstat(sock); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("mcp refused but left its admin socket %s: %v", sock, err)
	}
}

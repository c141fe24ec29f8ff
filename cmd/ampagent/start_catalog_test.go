//go:build unix

package main

import (
	"net"
	"strings"
	"testing"
)

// TestStartRefusedAtTheLedgerReleasesTheCatalogListener: a start refused
// at the ledger releases --catalog-listen's port too.
func TestStartRefusedAtTheLedgerReleasesTheCatalogListener(t *testing.T) {
	db, key := serveStore(t)
	addr := freeAddr(t)
	r := serveRefusal(t, "--db", db, "--key", key, "--allow", "*=org.example.", "--ledger", damagedLedger(t), "--listen", freeAddr(t), "--catalog-listen", addr)
	if r.code == 0 || !strings.Contains(r.stderr, "ledger file is damaged") {
		t.Fatalf("serve was not refused at the ledger (exit %d): %s", r.code, r.stderr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("--catalog-listen %s still held after the refused start: %v", addr, err)
	}
	ln.Close()
}

package main

import (
	"crypto/ed25519"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/ampbundle/ampbundle/amp"
)

// TestTrustLsShowsAnOlderStoresSmallOrderKeyAsRefused
//
// Attack (a hidden key): a store written before TRUST-21 may hold a key of
// small order among its trusted keys (anybody can sign as it). The store
// trusts it for nothing now, but trust ls listed only the keys it trusts,
// so the operator saw a store without it, and could not tell it was there
// nor which name to remove.
//
// Defence (docs/SPEC-DECISIONS.md TRUST-21, amended; docs/CLI.md §2.5):
// trust ls lists it after the trusted keys, marked REFUSED (small_order)
// with the command that removes it; with --json in "refused", each entry
// with "refused": "small_order", never in "keys". trust rm removes it.
func TestTrustLsShowsAnOlderStoresSmallOrderKeyAsRefused(t *testing.T) {
	db := storeWithSamples(t)
	identity := make(ed25519.PublicKey, ed25519.PublicKeySize)
	identity[0] = 0x01
	// The trust record as a build before TRUST-21 wrote it.
	rec, err := amp.Marshal(struct {
		Name    string   `cbor:"name"`
		Key     []byte   `cbor:"key"`
		Scopes  []string `cbor:"scopes"`
		AddedAt string   `cbor:"added_at"`
	}{"old", identity, []string{"*"}, "2026-01-01T00:00:00Z"})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := bolt.Open(db, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = raw.Update(func(tx *bolt.Tx) error { return tx.Bucket([]byte("trust")).Put([]byte("old"), rec) })
	if cerr := raw.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	did := amp.DIDKey(identity)

	r := mustRun(t, "trust", "ls", "--db", db)
	if !strings.Contains(r.stdout, "old  REFUSED (small_order") || !strings.Contains(r.stdout, did) || !strings.Contains(r.stdout, "ampbundle trust rm old") {
		t.Fatalf("trust ls does not show the refused key:\n%s", r.stdout)
	}
	var doc struct {
		Keys    []struct{ Name string }
		Refused []struct{ Name, Key, Refused string }
	}
	mustJSON(t, &doc, "trust", "ls", "--db", db)
	for _, k := range doc.Keys {
		if k.Name == "old" {
			t.Fatal("trust ls --json lists the small-order key among the trusted keys")
		}
	}
	if len(doc.Refused) != 1 || doc.Refused[0].Name != "old" || doc.Refused[0].Key != did || doc.Refused[0].Refused != "small_order" {
		t.Fatalf("trust ls --json refused = %+v, want old, %s, small_order", doc.Refused, did)
	}
	mustRun(t, "trust", "rm", "old", "--db", db)
	if r := mustRun(t, "trust", "ls", "--db", db); strings.Contains(r.stdout, "REFUSED") {
		t.Fatalf("after trust rm the refused key is still listed:\n%s", r.stdout)
	}
}

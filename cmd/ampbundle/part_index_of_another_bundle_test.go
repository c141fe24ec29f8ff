package main

import (
	"crypto/ed25519"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/keyfile"
)

// TestPartIndexOfAnotherBundle: a part index that names another bundle
// than the one its parts carry. Attack (a publisher trusted for its own
// namespace, or one whose key is trusted here): it takes the parts of
// someone else's release and signs an index of its own over their hashes,
// naming its own bundle_id (or another version). The parts match every
// hash the index gives, so the split read clean: 'ampbundle verify' said
// "signed by acme" about example's bundle, and an import went on to the
// store. Such an index is refused as part_mismatch, naming both bundles,
// before any side effect: verify reports nothing verified, import leaves
// the store and its audit log as they were, join writes no file
// (docs/SPEC-DECISIONS.md BUNDLE-14).
func TestPartIndexOfAnotherBundle(t *testing.T) {
	file := bigTranslate(t)
	dir := t.TempDir()
	var res struct {
		Index string `json:"index"`
	}
	mustJSON(t, &res, "split", file, "--size", "64K", "--key", sampleKey(t, "example-publisher"), "--out-dir", dir)
	f, err := os.Open(res.Index)
	if err != nil {
		t.Fatal(err)
	}
	x, err := bundle.DecodePartIndexFile(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	pem, err := os.ReadFile(filepath.Join(testdata, "keys", "TEST-ONLY-acme-publisher.key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	acme, err := keyfile.ParsePrivate(pem)
	if err != nil {
		t.Fatal(err)
	}
	resign := func(id string, version uint64) {
		t.Helper()
		y := *x
		y.BundleID, y.Version = id, version
		signed, err := bundle.SignPartIndex(&y, []ed25519.PrivateKey{acme.Ed25519})
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(res.Index, signed, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name    string
		id      string
		version uint64
	}{
		{"another bundle_id", geoID, x.Version},
		{"another version", translateID, x.Version + 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resign(tc.id, tc.version)
			r := failsWith(t, "part_mismatch", "verify", res.Index, "--trust", samplePub("example-publisher"), "--trust", samplePub("acme-publisher"))
			if !strings.Contains(r.stdout, translateID) || !strings.Contains(r.stdout, tc.id) {
				t.Fatalf("the refusal does not name both bundles: %s", r.stdout)
			}
			// The index signer is trusted for the bundle_id it names.
			db := filepath.Join(t.TempDir(), "store.db")
			mustRun(t, "trust", "add", samplePub("example-publisher"), "--db", db, "--name", "example", "--scope", "org.example")
			mustRun(t, "trust", "add", samplePub("acme-publisher"), "--db", db, "--name", "acme", "--scope", "com.acme", "--scope", "org.example")
			audit := mustRun(t, "audit", "--db", db).stdout
			failsWith(t, "part_mismatch", "import", res.Index, "--db", db)
			if got := mustRun(t, "audit", "--db", db).stdout; got != audit {
				t.Fatalf("a refused split changed the audit log:\n%s\nwas\n%s", got, audit)
			}
			var ls struct {
				Bundles []any `json:"bundles"`
			}
			mustJSON(t, &ls, "ls", "--db", db)
			if len(ls.Bundles) != 0 {
				t.Fatalf("a refused split installed %v", ls.Bundles)
			}
			out := filepath.Join(t.TempDir(), "joined.ampb")
			failsWith(t, "part_mismatch", "join", res.Index, "-o", out, "--trust", samplePub("acme-publisher"))
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Fatalf("join wrote %s for an index of another bundle", out)
			}
		})
	}
}

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/bundle"
)

// TestImportSamples: both samples import with the right trust; a second
// import of the same file is reported unchanged; flags work before and
// after FILE.
func TestImportSamples(t *testing.T) {
	db := newStore(t)
	count, _, blobs := artifactTotals(t, "translate")
	var res importJSON
	mustJSON(t, &res, "import", sampleFile("translate"), "--db", db)
	if res.BundleID != translateID || res.Version != 1 || res.PreviousVersion != 0 || res.Unchanged || res.Downgrade ||
		strings.Join(res.Signers, ",") != "example" || len(res.Capabilities) != 4 || res.Artifacts != int(count) ||
		res.NewBlobs != int(blobs) || res.Generation != 3 {
		t.Fatalf("translate: %+v", res)
	}
	r := mustRun(t, "import", "--db", db, sampleFile("geo"))
	for _, want := range []string{"imported com.acme.geo version 4\n", "signed by     acme\n",
		"capabilities  com.acme.geo.distance:1.0.0, com.acme.geo.geocode:1.0.0\n", "artifacts     5 (5 new blobs"} {
		if !strings.Contains(r.stdout, want) {
			t.Fatalf("geo: missing %q in\n%s", want, r.stdout)
		}
	}
	mustJSON(t, &res, "import", "--json", "--db", db, sampleFile("geo"))
	if !res.Unchanged || res.Generation != 4 || res.NewBlobs != 0 {
		t.Fatalf("re-import: %+v", res)
	}
	if r := mustRun(t, "import", sampleFile("geo"), "--db", db); !strings.HasPrefix(r.stdout, "unchanged: com.acme.geo version 4") {
		t.Fatalf("re-import: %s", r.stdout)
	}
	// A newer version is an upgrade.
	mustJSON(t, &res, "import", translateVersion(t, 2), "--db", db)
	if res.Version != 2 || res.PreviousVersion != 1 || res.Downgrade || res.NewBlobs != 0 {
		t.Fatalf("upgrade: %+v", res)
	}
}

// TestImportRefusals: each refusal carries its error name under --json and
// leaves the store as it was.
func TestImportRefusals(t *testing.T) {
	dir := t.TempDir()
	// Untrusted key: the store trusts only acme.
	db := filepath.Join(dir, "acme-only.db")
	mustRun(t, "trust", "add", samplePub("acme-publisher"), "--db", db, "--name", "acme", "--scope", "*")
	failsWith(t, "untrusted_key", "import", sampleFile("translate"), "--db", db)
	// Wrong namespace: the right key, trusted for another namespace.
	db2 := filepath.Join(dir, "wrong-scope.db")
	mustRun(t, "trust", "add", samplePub("example-publisher"), "--db", db2, "--name", "example", "--scope", "com.acme")
	failsWith(t, "untrusted_namespace", "import", sampleFile("translate"), "--db", db2)
	// Tampered file.
	data, err := os.ReadFile(sampleFile("translate"))
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)-10] ^= 1
	bad := filepath.Join(dir, "bad.ampb")
	if err := os.WriteFile(bad, data, 0o644); err != nil {
		t.Fatal(err)
	}
	db3 := newStore(t)
	failsWith(t, "hash_mismatch", "import", bad, "--db", db3)
	for _, store := range []string{db, db2, db3} {
		var ls lsJSON
		mustJSON(t, &ls, "ls", "--db", store)
		if len(ls.Bundles) != 0 || len(ls.Capabilities) != 0 {
			t.Fatalf("a refused import changed the store: %+v", ls)
		}
		mustRun(t, "check", "--db", store)
	}
	// Missing store: the error says how a store is born.
	missing := filepath.Join(dir, "none.db")
	failsWith(t, "store_missing", "import", sampleFile("geo"), "--db", missing)
	r := runCLI(t, nil, "import", sampleFile("geo"), "--db", missing)
	if r.code != 1 || !strings.Contains(r.stderr, "hint: a store is created by trusting a publisher key: ampbundle trust add PUB --db "+missing) {
		t.Fatalf("missing store: %d %s", r.code, r.stderr)
	}
	if _, err := os.Stat(missing); err == nil {
		t.Fatal("import created a store")
	}
	failsWith(t, "io_error", "import", filepath.Join(dir, "none.ampb"), "--db", db3)
	for name, args := range map[string][]string{
		"no file":   {"import", "--db", db3},
		"two files": {"import", bad, bad, "--db", db3},
		"no db":     {"import", bad},
	} {
		if r := runCLI(t, nil, args...); r.code != 2 {
			t.Errorf("%s: exit %d, want 2", name, r.code)
		}
	}
}

// TestImportRollback: an older version after a newer one is a rollback;
// --allow-downgrade accepts it loudly, and the audit log shows it.
func TestImportRollback(t *testing.T) {
	db := newStore(t)
	mustRun(t, "import", translateVersion(t, 3), "--db", db)
	failsWith(t, "rollback", "import", sampleFile("translate"), "--db", db)
	failsWith(t, "rollback", "import", translateVersion(t, 2), "--db", db)
	var res importJSON
	mustJSON(t, &res, "import", sampleFile("translate"), "--allow-downgrade", "--db", db)
	if !res.Downgrade || res.Version != 1 || res.PreviousVersion != 3 || !strings.Contains(res.Warning, "downgrade") {
		t.Fatalf("downgrade: %+v", res)
	}
	r := mustRun(t, "import", "--allow-downgrade", translateVersion(t, 2), "--db", db)
	if !strings.Contains(r.stdout, "DOWNGRADED org.example.translate from version 1 to version 2") ||
		!strings.HasPrefix(r.stderr, "WARNING: downgrade: org.example.translate version 2") {
		t.Fatalf("human downgrade:\n%s\n%s", r.stdout, r.stderr)
	}
	var audit auditOut
	mustJSON(t, &audit, "audit", "--db", db)
	var actions []string
	for _, e := range audit.Entries {
		actions = append(actions, e.Action)
	}
	if got := strings.Join(actions, " "); got != "trust_add trust_add import import_refused import_refused downgrade downgrade" {
		t.Fatalf("audit actions: %s", got)
	}
	if e := audit.Entries[5]; e.BundleID != translateID || e.Version != 1 || e.PreviousVersion != 3 {
		t.Fatalf("downgrade entry: %+v", e)
	}
}

// TestImportProgress: progress is drawn on a terminal, never under --json.
func TestImportProgress(t *testing.T) {
	db := newStore(t)
	r := runTTY(t, "import", sampleFile("translate"), "--db", db)
	if r.code != 0 || !strings.Contains(r.stderr, "importing 100%") {
		t.Fatalf("tty import: %d %q", r.code, r.stderr)
	}
	r = runTTY(t, "import", sampleFile("geo"), "--db", db, "--json")
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("tty --json import: %d %q", r.code, r.stderr)
	}
	r = runCLI(t, nil, "import", translateVersion(t, 2), "--db", db)
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("non-tty import: %d %q", r.code, r.stderr)
	}
}

// TestUntrustedKeyNamesTheSigner: a bundle signed by a key the store does
// not trust is refused naming the signer's did:key, in the human message
// and as --json details (threat: an operator who cannot tell which key
// signed a bundle trusts the wrong one, or widens trust to get past it).
func TestUntrustedKeyNamesTheSigner(t *testing.T) {
	db := filepath.Join(t.TempDir(), "acme-only.db")
	mustRun(t, "trust", "add", samplePub("acme-publisher"), "--db", db, "--name", "acme", "--scope", "*")
	r := failsWith(t, "untrusted_key", "import", sampleFile("translate"), "--db", db)
	var doc struct {
		Error struct {
			Message string                     `json:"message"`
			Details bundle.UntrustedKeyDetails `json:"details"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(doc.Error.Message, exampleDID) || len(doc.Error.Details.Signers) != 1 || doc.Error.Details.Signers[0].Key != exampleDID {
		t.Fatalf("untrusted_key: %s", r.stdout)
	}
	h := runCLI(t, nil, "import", sampleFile("translate"), "--db", db)
	if h.code != 1 || !strings.Contains(h.stderr, "signed by "+exampleDID) || strings.Contains(h.stderr, "untrusted_key") {
		t.Fatalf("human untrusted_key: %q", h.stderr)
	}
}

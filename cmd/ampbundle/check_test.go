package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/resolver"
)

// TestCheckCleanAndCorrupted: a sound store checks clean; a schema's
// bytes altered inside the store file make check fail with store_damaged
// (each problem on stderr), resolve of that schema fail with 5002, and
// export refuse to hand the altered bundle on.
func TestCheckCleanAndCorrupted(t *testing.T) {
	db := storeWithSamples(t)
	r := mustRun(t, "check", "--db", db)
	if !strings.HasPrefix(r.stdout, "store "+db+" is sound: 2 bundle(s), 2 trusted key(s), generation 4\n") || r.stderr != "" {
		t.Fatalf("check: %q %q", r.stdout, r.stderr)
	}
	var ok struct {
		OK          bool   `json:"ok"`
		Bundles     int    `json:"bundles"`
		TrustedKeys int    `json:"trusted_keys"`
		Generation  uint64 `json:"generation"`
		AuditHead   string `json:"audit_head"`
	}
	mustJSON(t, &ok, "check", "--db", db)
	if !ok.OK || ok.Bundles != 2 || ok.TrustedKeys != 2 || ok.Generation != 4 || len(ok.AuditHead) != 64 {
		t.Fatalf("check json: %+v", ok)
	}

	schema, err := os.ReadFile(filepath.Join(testdata, "translate", schemaKey100))
	if err != nil {
		t.Fatal(err)
	}
	flipAll(t, db, schema)
	r = failsWith(t, "store_damaged", "check", "--db", db)
	if !strings.Contains(r.stdout, "store check found 1 problem(s) (blob 1)") || !strings.Contains(r.stdout, "blob sha-256:"+sha256hex(schema)+" does not match its hash") {
		t.Fatalf("damaged check:\n%s\n%s", r.stdout, r.stderr)
	}
	r = runCLI(t, nil, "check", "--db", db)
	if r.code != 1 || r.stdout != "" || !strings.Contains(r.stderr, "problem: [blob]") || !strings.Contains(r.stderr, "hint: do not serve from this store") {
		t.Fatalf("damaged check, human: %d %q %q", r.code, r.stdout, r.stderr)
	}
	r = failsWith(t, "hash_mismatch", "resolve", "--db", db, "--bundle-id", translateID, "--artifact-key", schemaKey100, "--hash", sha256hex(schema))
	if ampCode(t, r) != 5002 {
		t.Fatalf("resolve of a tampered schema: %s", r.stdout)
	}
	out := filepath.Join(t.TempDir(), "t.ampb")
	failsWith(t, "hash_mismatch", "export", translateID, "--db", db, "-o", out)
	if entries, _ := os.ReadDir(filepath.Dir(out)); len(entries) != 0 {
		t.Fatalf("a failed export left %v", entries)
	}
	// The other bundle is untouched.
	mustRun(t, "export", geoID, "--db", db, "-o", out)
}

// interruptImport leaves an import of the geo sample half done in db, as a
// kill during staging would: every artifact is its own staging batch, and
// the store is closed under the import once the second artifact has been
// read (after the first batch was journaled), so neither the next batch nor
// the rollback can run. It needs no fault hook: production builds have none.
func interruptImport(t *testing.T, db string) {
	t.Helper()
	var s *resolver.Store
	artifacts := 0
	s, err := resolver.Open(db, resolver.Options{StageBatchBytes: 1})
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(sampleFile("geo"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	opts := resolver.ImportOptions{Progress: func(int64) {
		if artifacts++; artifacts == 2 {
			s.Close()
		}
	}}
	if _, err := s.Import(context.Background(), f, opts); err == nil {
		t.Fatal("the interrupted import succeeded")
	}
	if artifacts < 2 {
		t.Fatalf("the geo sample has %d artifacts; the interruption needs two", artifacts)
	}
}

// TestCheckInterruptedImportIsRecoverable: after an import killed while
// staging, check must not send the operator to a backup (threat: an
// operator told "restore from a backup" throws away a sound store). It
// fails with store_needs_recovery, recoverable, the problems in the JSON
// details (not on stderr); check --repair rolls the import back and the
// store checks sound, with the bundles it had.
func TestCheckInterruptedImportIsRecoverable(t *testing.T) {
	db := newStore(t)
	mustRun(t, "import", sampleFile("translate"), "--db", db)
	interruptImport(t, db)

	r := failsWith(t, "store_needs_recovery", "check", "--db", db)
	if r.stderr != "" {
		t.Fatalf("check --json wrote on stderr: %q", r.stderr)
	}
	var doc struct {
		Error struct {
			Details checkReport `json:"details"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatal(err)
	}
	if !doc.Error.Details.Recoverable || len(doc.Error.Details.Problems) == 0 {
		t.Fatalf("details: %s", r.stdout)
	}
	for _, p := range doc.Error.Details.Problems {
		if p.Kind != "pending" {
			t.Fatalf("an interrupted import shows as %q: %s", p.Kind, p.Message)
		}
	}
	h := runCLI(t, nil, "check", "--db", db)
	if h.code != 1 || !strings.Contains(h.stderr, "problem: [pending]") || !strings.Contains(h.stderr, "hint: ampbundle check --repair") || strings.Contains(h.stderr, "backup") {
		t.Fatalf("human check: %d %q", h.code, h.stderr)
	}

	mustRun(t, "check", "--repair", "--db", db)
	var ok struct {
		OK      bool `json:"ok"`
		Bundles int  `json:"bundles"`
	}
	mustJSON(t, &ok, "check", "--db", db)
	if !ok.OK || ok.Bundles != 1 {
		t.Fatalf("after repair: %+v", ok)
	}
}

// TestCheckJSONDamageInDetails: with --json, a damaged store's problems
// are in the error document's details and nothing is written on stderr (a
// program reading stdout gets every problem).
func TestCheckJSONDamageInDetails(t *testing.T) {
	db := storeWithSamples(t)
	schema, err := os.ReadFile(filepath.Join(testdata, "translate", schemaKey100))
	if err != nil {
		t.Fatal(err)
	}
	flipAll(t, db, schema)
	r := failsWith(t, "store_damaged", "check", "--db", db)
	var doc struct {
		Error struct {
			Details checkReport `json:"details"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatal(err)
	}
	if r.stderr != "" || doc.Error.Details.Recoverable || len(doc.Error.Details.Problems) != 1 || doc.Error.Details.Problems[0].Kind != "blob" {
		t.Fatalf("damaged check json: %s / %q", r.stdout, r.stderr)
	}
}

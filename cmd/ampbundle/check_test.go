package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
	if !strings.Contains(r.stdout, "store check found 1 problem(s) (blob 1)") || !strings.Contains(r.stderr, "problem: [blob] blob sha-256:"+sha256hex(schema)+" does not match its hash") {
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

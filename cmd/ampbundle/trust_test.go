package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type trustLsOut struct {
	Keys []trustJSON `json:"keys"`
}

// TestTrustRoundTrip: trust add creates the store, ls lists the keys with
// their scopes, rm removes one; flags work before and after PUB.
func TestTrustRoundTrip(t *testing.T) {
	db := filepath.Join(t.TempDir(), "store.db")
	var added struct {
		Store   string    `json:"store"`
		Created bool      `json:"created"`
		Trusted trustJSON `json:"trusted"`
	}
	mustJSON(t, &added, "trust", "add", samplePub("example-publisher"), "--db", db, "--name", "example", "--scope", "org.example.")
	if !added.Created || added.Trusted.Key != exampleDID || strings.Join(added.Trusted.Scopes, ",") != "org.example" {
		t.Fatalf("trust add: %+v", added)
	}
	if st, err := os.Stat(db); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("store file: %v %v", st, err)
	}
	// Flags before the positional argument; a did:key; two scopes.
	r := mustRun(t, "trust", "add", "--db", db, "--name", "acme", "--scope", "com.acme", "--scope", "org.acme", acmeDID)
	if strings.Contains(r.stdout, "created store") || !strings.Contains(r.stdout, "trusted acme ("+acmeDID+") for com.acme, org.acme") {
		t.Fatalf("trust add: %s", r.stdout)
	}
	var ls trustLsOut
	mustJSON(t, &ls, "trust", "ls", "--db", db)
	if len(ls.Keys) != 2 || ls.Keys[0].Name != "acme" || ls.Keys[1].Name != "example" || ls.Keys[0].AddedAt != "2026-11-22T12:00:00Z" {
		t.Fatalf("trust ls: %+v", ls)
	}
	r = mustRun(t, "trust", "ls", "--db", db)
	if !strings.Contains(r.stdout, "example\n  key     "+exampleDID+"\n  scopes  org.example\n") {
		t.Fatalf("trust ls: %s", r.stdout)
	}
	// rm --keep-serving; the bundle it signed stays installed and is named.
	mustRun(t, "import", sampleFile("translate"), "--db", db)
	var removed struct {
		Removed        trustJSON `json:"removed"`
		StillInstalled []string  `json:"still_installed"`
	}
	mustJSON(t, &removed, "trust", "rm", "--db", db, "--keep-serving", "example")
	if removed.Removed.Key != exampleDID || len(removed.StillInstalled) != 1 || removed.StillInstalled[0] != translateID {
		t.Fatalf("trust rm: %+v", removed)
	}
	mustJSON(t, &ls, "trust", "ls", "--db", db)
	if len(ls.Keys) != 1 || ls.Keys[0].Name != "acme" {
		t.Fatalf("after rm: %+v", ls)
	}
	failsWith(t, "unknown_trust", "trust", "rm", "example", "--db", db)
	mustRun(t, "trust", "rm", "acme", "--db", db)
	if r := mustRun(t, "trust", "ls", "--db", db); r.stdout != "no trusted keys\n" {
		t.Fatalf("empty ls: %q", r.stdout)
	}
	// Without a trusted key nothing imports.
	failsWith(t, "untrusted_key", "import", sampleFile("geo"), "--db", db)
}

func TestTrustRefusals(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "store.db")
	pub := samplePub("example-publisher")
	// A refused first trust leaves no empty store behind.
	for _, scope := range []string{"Org.Example", "org..example", "org.*", "", ".org"} {
		failsWith(t, "invalid_trust", "trust", "add", pub, "--db", db, "--name", "example", "--scope", scope)
		if _, err := os.Stat(db); err == nil {
			t.Fatalf("scope %q: a refused trust add left a store behind", scope)
		}
	}
	failsWith(t, "invalid_trust", "trust", "add", pub, "--db", db, "--name", "has space", "--scope", "org.example")
	failsWith(t, "invalid_public_key", "trust", "add", "did:key:zNotAKey", "--db", db, "--name", "x", "--scope", "org.example")
	failsWith(t, "key_unreadable", "trust", "add", filepath.Join(dir, "missing.pem"), "--db", db, "--name", "x", "--scope", "org.example")
	// Duplicate name, and the same key under a second name.
	mustRun(t, "trust", "add", pub, "--db", db, "--name", "example", "--scope", "org.example")
	failsWith(t, "trust_exists", "trust", "add", samplePub("acme-publisher"), "--db", db, "--name", "example", "--scope", "com.acme")
	failsWith(t, "trust_exists", "trust", "add", exampleDID, "--db", db, "--name", "example2", "--scope", "org.example")
	// A refusal on an existing store keeps it.
	failsWith(t, "invalid_trust", "trust", "add", acmeDID, "--db", db, "--name", "acme", "--scope", "com..acme")
	var ls trustLsOut
	mustJSON(t, &ls, "trust", "ls", "--db", db)
	if len(ls.Keys) != 1 {
		t.Fatalf("keys after refusals: %+v", ls)
	}
	// Usage errors.
	for name, args := range map[string][]string{
		"no scope":     {"trust", "add", pub, "--db", db, "--name", "n"},
		"no name":      {"trust", "add", pub, "--db", db, "--scope", "org.example"},
		"no db":        {"trust", "add", pub, "--name", "n", "--scope", "org.example"},
		"no key":       {"trust", "add", "--db", db, "--name", "n", "--scope", "org.example"},
		"two keys":     {"trust", "add", pub, pub, "--db", db, "--name", "n", "--scope", "org.example"},
		"ls with arg":  {"trust", "ls", "x", "--db", db},
		"rm no name":   {"trust", "rm", "--db", db},
		"unknown flag": {"trust", "ls", "--db", db, "--all"},
		"no sub":       {"trust"},
		"unknown sub":  {"trust", "list", "--db", db},
	} {
		if r := runCLI(t, nil, args...); r.code != 2 {
			t.Errorf("%s: exit %d, want 2 (%s)", name, r.code, r.stderr)
		}
	}
	if r := runCLI(t, nil, "trust", "add", pub, "--db", db, "--name", "n"); !strings.Contains(r.stderr, "hint: give the namespaces") {
		t.Fatalf("no scope hint: %s", r.stderr)
	}
}

// TestTrustRmOfTheLastKeyFailsItsBundlesClosed: removing the only key
// trusted for a served bundle's scope stops that bundle being served, by
// default (threat: an operator who stops trusting a compromised publisher
// keeps serving what it signed, because the safe outcome needed a flag).
// --keep-serving is the explicit opt-out, and it cannot be combined with
// --fail-closed (the old opt-in, still accepted).
func TestTrustRmOfTheLastKeyFailsItsBundlesClosed(t *testing.T) {
	const key = "dids/translator.json"
	want, err := os.ReadFile(filepath.Join(testdata, "translate", key))
	if err != nil {
		t.Fatal(err)
	}
	resolveArgs := func(db string) []string {
		return []string{"resolve", "--db", db, "--bundle-id", translateID, "--artifact-key", key, "--hash", sha256hex(want)}
	}
	db := storeWithSamples(t)
	mustRun(t, resolveArgs(db)...)
	var out struct {
		FailedClosed   []string `json:"failed_closed"`
		StillInstalled []string `json:"still_installed"`
	}
	mustJSON(t, &out, "trust", "rm", "example", "--db", db)
	if strings.Join(out.FailedClosed, ",") != translateID+"@1" || len(out.StillInstalled) != 0 {
		t.Fatalf("trust rm without flags: %+v", out)
	}
	failsWith(t, "bundle_revoked", resolveArgs(db)...)

	db = storeWithSamples(t)
	r := mustRun(t, "trust", "rm", "example", "--db", db, "--keep-serving")
	if !strings.Contains(r.stdout, "still installed and served, signed by example: "+translateID) {
		t.Fatalf("trust rm --keep-serving: %s", r.stdout)
	}
	mustRun(t, resolveArgs(db)...)

	db = storeWithSamples(t)
	if r := runCLI(t, nil, "trust", "rm", "acme", "--db", db, "--keep-serving", "--fail-closed"); r.code != 2 {
		t.Fatalf("--keep-serving with --fail-closed: exit %d %s", r.code, r.stderr)
	}
	if keys := mustRun(t, "trust", "ls", "--db", db); !strings.Contains(keys.stdout, "acme") {
		t.Fatalf("a refused trust rm removed the key: %s", keys.stdout)
	}
}

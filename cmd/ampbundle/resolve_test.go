package main

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func sha256hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func TestResolve(t *testing.T) {
	db := storeWithSamples(t)
	for _, key := range []string{schemaKey100, "schemas/common/text.json", "dids/translator.json"} {
		want, err := os.ReadFile(filepath.Join(testdata, "translate", key))
		if err != nil {
			t.Fatal(err)
		}
		// Flags in any order: the bytes exactly, nothing added.
		r := mustRun(t, "resolve", "--hash", sha256hex(want), "--db", db, "--artifact-key", key, "--bundle-id", translateID)
		if r.stdout != string(want) || r.stderr != "" {
			t.Fatalf("resolve %s: %q", key, r.stdout)
		}
		var doc resolveJSON
		mustJSON(t, &doc, "resolve", "--db", db, "--bundle-id", translateID, "--artifact-key", key, "--hash-alg", "sha-256", "--hash", strings.ToUpper(sha256hex(want)))
		got, err := base64.StdEncoding.DecodeString(doc.ContentBase64)
		if err != nil || string(got) != string(want) || doc.Size != len(want) || doc.Hash != sha256hex(want) || doc.HashAlg != "sha-256" ||
			doc.BundleID != translateID || doc.ArtifactKey != key {
			t.Fatalf("resolve --json %s: %+v", key, doc)
		}
	}
	// Every resolution failure is 5002, with nothing on stdout but the
	// error document.
	good := sha256hex([]byte("not the schema"))
	for name, c := range map[string]struct {
		args []string
		want string
	}{
		"wrong hash":     {[]string{"--bundle-id", translateID, "--artifact-key", schemaKey100, "--hash", good}, "hash_mismatch"},
		"wrong alg":      {[]string{"--bundle-id", translateID, "--artifact-key", schemaKey100, "--hash-alg", "sha-512", "--hash", strings.Repeat("ab", 64)}, "hash_mismatch"},
		"no bundle":      {[]string{"--bundle-id", "org.example.other", "--artifact-key", schemaKey100, "--hash", good}, "bundle_missing"},
		"no artifact":    {[]string{"--bundle-id", translateID, "--artifact-key", "schemas/none.json", "--hash", good}, "artifact_missing"},
		"other bundle's": {[]string{"--bundle-id", geoID, "--artifact-key", schemaKey100, "--hash", good}, "artifact_missing"},
	} {
		args := append([]string{"resolve", "--db", db}, c.args...)
		r := failsWith(t, c.want, args...)
		if ampCode(t, r) != 5002 {
			t.Errorf("%s: %s", name, r.stdout)
		}
		r = runCLI(t, nil, args...)
		if r.code != 1 || r.stdout != "" || !strings.Contains(r.stderr, "(amp 5002 UNAVAILABLE)") {
			t.Errorf("%s, human: %d %q %q", name, r.code, r.stdout, r.stderr)
		}
	}
	// An expired bundle is not served (translate expires 2036-01-01).
	want, _ := os.ReadFile(filepath.Join(testdata, "translate", schemaKey100))
	r := runWith(t, time.Date(2036, 1, 1, 0, 0, 0, 0, time.UTC), false,
		"resolve", "--db", db, "--bundle-id", translateID, "--artifact-key", schemaKey100, "--hash", sha256hex(want), "--json")
	if r.code != 1 || errorCode(t, r) != "bundle_expired" || ampCode(t, r) != 5002 {
		t.Fatalf("expired: %d %s", r.code, r.stdout)
	}
	for name, args := range map[string][]string{
		"no hash":       {"resolve", "--db", db, "--bundle-id", translateID, "--artifact-key", schemaKey100},
		"no bundle id":  {"resolve", "--db", db, "--artifact-key", schemaKey100, "--hash", good},
		"no key":        {"resolve", "--db", db, "--bundle-id", translateID, "--hash", good},
		"bad hex":       {"resolve", "--db", db, "--bundle-id", translateID, "--artifact-key", schemaKey100, "--hash", "xyz"},
		"short hash":    {"resolve", "--db", db, "--bundle-id", translateID, "--artifact-key", schemaKey100, "--hash", "abcd"},
		"sha-512 short": {"resolve", "--db", db, "--bundle-id", translateID, "--artifact-key", schemaKey100, "--hash-alg", "sha-512", "--hash", good},
		"md5":           {"resolve", "--db", db, "--bundle-id", translateID, "--artifact-key", schemaKey100, "--hash-alg", "md5", "--hash", good},
		"positional":    {"resolve", "--db", db, schemaKey100},
	} {
		if r := runCLI(t, nil, args...); r.code != 2 {
			t.Errorf("%s: exit %d, want 2", name, r.code)
		}
	}
}

package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/internal/cliutil"
	"github.com/ampbundle/ampbundle/resolver"
)

// Helpers shared by the registry command tests.

const (
	exampleDID   = "did:key:z6Mkkun6rSiirUQkSt2ALNoLxwdvrURajioRa5UPYsaG938F"
	acmeDID      = "did:key:z6MkgmhuCPpeYzbavzFAbHq9UuUQGvCxNVhdPtY6CR9jMifA"
	translateID  = "org.example.translate"
	geoID        = "com.acme.geo"
	schemaKey100 = "capabilities/org.example.translate.text/1.0.0/output.schema.json"
)

func sampleFile(name string) string { return filepath.Join(testdata, name+".ampb") }

// inspectSample returns the manifest summary of a sample bundle, so that
// tests do not hard-code sizes a change of the samples would alter.
func inspectSample(t *testing.T, name string) summary {
	t.Helper()
	var s summary
	mustJSON(t, &s, "inspect", sampleFile(name))
	return s
}

// artifactTotals returns the artifact count, their total size and the
// number of distinct blobs of a sample.
func artifactTotals(t *testing.T, name string) (count, bytes, blobs uint64) {
	t.Helper()
	seen := map[string]bool{}
	for _, a := range inspectSample(t, name).Artifacts {
		count++
		bytes += a.Size
		seen[a.HashAlg+":"+a.Hash] = true
	}
	return count, bytes, uint64(len(seen))
}

// mustRun runs the CLI and fails the test unless it exits 0.
func mustRun(t *testing.T, args ...string) result {
	t.Helper()
	r := runCLI(t, nil, args...)
	if r.code != 0 {
		t.Fatalf("%s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	return r
}

// mustJSON runs the CLI with --json, expects exit 0 and decodes stdout.
func mustJSON(t *testing.T, v any, args ...string) {
	t.Helper()
	r := mustRun(t, append(args, "--json")...)
	if err := json.Unmarshal([]byte(r.stdout), v); err != nil {
		t.Fatalf("%s: not JSON: %v\n%s", strings.Join(args, " "), err, r.stdout)
	}
}

// failsWith runs the CLI with --json and expects exit 1 and the error name.
func failsWith(t *testing.T, name string, args ...string) result {
	t.Helper()
	r := runCLI(t, nil, append(args, "--json")...)
	if r.code != 1 {
		t.Fatalf("%s: exit %d, want 1\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	if got := errorCode(t, r); got != name {
		t.Fatalf("%s: error %q, want %q\n%s", strings.Join(args, " "), got, name, r.stdout)
	}
	return r
}

// ampCode returns the amp_code of an error document (0 when absent).
func ampCode(t *testing.T, r result) int {
	t.Helper()
	var doc struct {
		Error struct {
			AMPCode int `json:"amp_code"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("not an error document: %s", r.stdout)
	}
	return doc.Error.AMPCode
}

// newStore creates a store trusting each sample publisher for its own
// namespace, and returns its path.
func newStore(t *testing.T) string {
	t.Helper()
	db := filepath.Join(t.TempDir(), "store.db")
	mustRun(t, "trust", "add", samplePub("example-publisher"), "--db", db, "--name", "example", "--scope", "org.example")
	mustRun(t, "trust", "add", samplePub("acme-publisher"), "--db", db, "--name", "acme", "--scope", "com.acme")
	return db
}

// storeWithSamples is newStore with both samples imported.
func storeWithSamples(t *testing.T) string {
	t.Helper()
	db := newStore(t)
	mustRun(t, "import", sampleFile("translate"), "--db", db)
	mustRun(t, "import", sampleFile("geo"), "--db", db)
	return db
}

// translateVersion builds the translate sample as another version, signed
// by the same test key, and returns the file.
func translateVersion(t *testing.T, version int) string {
	t.Helper()
	src := filepath.Join(t.TempDir(), "translate")
	if err := os.CopyFS(src, os.DirFS(filepath.Join(testdata, "translate"))); err != nil {
		t.Fatal(err)
	}
	manifest := filepath.Join(src, "bundle.json")
	data, err := os.ReadFile(manifest)
	if err != nil {
		t.Fatal(err)
	}
	data = bytes.Replace(data, []byte(`"version": 1,`), []byte(`"version": `+strconv.Itoa(version)+`,`), 1)
	if err := os.WriteFile(manifest, data, 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "translate-v"+strconv.Itoa(version)+".ampb")
	mustRun(t, "build", src, "-o", out, "--key", sampleKey(t, "example-publisher"), "--created", "2026-11-10T00:00:00Z")
	return out
}

// flipAll flips one bit in the middle of every copy of needle in the file
// (bbolt may keep stale copies of a page in free pages) and returns how
// many copies there were.
func flipAll(t *testing.T, path string, needle []byte) int {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for i := 0; ; {
		j := bytes.Index(raw[i:], needle)
		if j < 0 {
			break
		}
		raw[i+j+len(needle)/2] ^= 0x01
		i += j + len(needle)
		n++
	}
	if n == 0 {
		t.Fatalf("%q not found in %s", needle, path)
	}
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestStoreInUse: while another opener (an agent, here a resolver.Store of
// the test process: flock is per open file description) holds the store,
// every command fails at once with store_in_use and a hint, instead of
// hanging; once it is closed they work.
func TestStoreInUse(t *testing.T) {
	db := storeWithSamples(t)
	held, err := resolver.Open(db, resolver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"import", sampleFile("geo"), "--db", db},
		{"trust", "add", exampleDID, "--db", db, "--name", "other", "--scope", "org.other"},
		{"rm", geoID, "--db", db},
		{"ls", "--db", db},
		{"check", "--db", db},
		{"audit", "--db", db},
	} {
		failsWith(t, "store_in_use", args...)
		r := runCLI(t, nil, args...)
		if r.code != 1 || !strings.Contains(r.stderr, "hint: another ampbundle command holds the store") {
			t.Fatalf("%v: exit %d, stderr %s", args, r.code, r.stderr)
		}
	}
	if err := held.Close(); err != nil {
		t.Fatal(err)
	}
	mustRun(t, "ls", "--db", db)
}

// TestStoreReadOnlyOpen: commands that only read never create a store and
// work beside another reader.
func TestStoreReadOnlyOpen(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "none.db")
	for _, args := range [][]string{
		{"trust", "ls", "--db", missing},
		{"ls", "--db", missing},
		{"export", translateID, "--db", missing, "-o", filepath.Join(t.TempDir(), "x.ampb")},
		{"check", "--db", missing},
		{"resolve", "--db", missing, "--bundle-id", translateID, "--artifact-key", "a", "--hash", strings.Repeat("00", 32)},
		{"audit", "--db", missing},
		{"rm", translateID, "--db", missing},
		{"trust", "rm", "example", "--db", missing},
	} {
		failsWith(t, "store_missing", args...)
		if _, err := os.Stat(missing); err == nil {
			t.Fatalf("%v created the store", args)
		}
	}
	db := storeWithSamples(t)
	reader, err := resolver.Open(db, resolver.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	mustRun(t, "ls", "--db", db)
	mustRun(t, "check", "--db", db)
}

// runTTY runs the CLI with stderr claimed to be a terminal.
func runTTY(t *testing.T, args ...string) result {
	t.Helper()
	return runWith(t, cliNow, true, args...)
}

// runWith runs the CLI at the time now, with stderr a terminal or not.
func runWith(t *testing.T, now time.Time, tty bool, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	env := &cliutil.Env{
		Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb,
		Now: func() time.Time { return now }, Rand: rand.Reader,
		Getenv: func(string) string { return "" }, StderrIsTerminal: tty,
	}
	code := run(context.Background(), env, append([]string{"ampbundle"}, args...))
	return result{code, out.String(), errb.String()}
}

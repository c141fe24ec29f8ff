package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/internal/cliutil"
)

// run is main without the process: tests call it with their own Env.
func run(ctx context.Context, env *cliutil.Env, args []string) int {
	return cliutil.Run(ctx, newApp(env), env, args)
}

type result struct {
	code           int
	stdout, stderr string
}

var cliNow = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

func runCLI(t *testing.T, envVars map[string]string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	env := &cliutil.Env{
		Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb,
		Now: func() time.Time { return cliNow }, Rand: rand.Reader,
		Getenv: func(k string) string { return envVars[k] },
	}
	code := run(context.Background(), env, append([]string{"ampbundle"}, args...))
	return result{code, out.String(), errb.String()}
}

func errorCode(t *testing.T, r result) string {
	t.Helper()
	var doc struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || doc.Error.Message == "" {
		t.Fatalf("not an error document: %s", r.stdout)
	}
	return doc.Error.Code
}

var testdata = filepath.Join("..", "..", "testdata", "bundles")

// sampleKey copies a committed test key to a 0600 file (a checkout does not
// keep file modes).
func sampleKey(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testdata, "keys", "TEST-ONLY-"+name+".key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), name+".key.pem")
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func samplePub(name string) string {
	return filepath.Join(testdata, "keys", "TEST-ONLY-"+name+".pub.pem")
}

// TestBuildReproducesSample: the CLI rebuilds the committed sample byte for
// byte, from --created and from SOURCE_DATE_EPOCH.
func TestBuildReproducesSample(t *testing.T) {
	key := sampleKey(t, "example-publisher")
	want, err := os.ReadFile(filepath.Join(testdata, "translate.ampb"))
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "t.ampb")
	r := runCLI(t, nil, "build", filepath.Join(testdata, "translate"), "-o", out, "--key", key, "--created", "2026-11-01T00:00:00Z", "--json")
	if r.code != 0 {
		t.Fatalf("build: %d %s %s", r.code, r.stdout, r.stderr)
	}
	got, _ := os.ReadFile(out)
	if !bytes.Equal(got, want) {
		t.Fatal("ampbundle build with --created does not reproduce testdata/bundles/translate.ampb")
	}
	out2 := filepath.Join(t.TempDir(), "t2.ampb")
	r = runCLI(t, map[string]string{"SOURCE_DATE_EPOCH": "1793491200"}, "build", "--key", key, filepath.Join(testdata, "translate"), "-o", out2)
	if r.code != 0 {
		t.Fatalf("build: %d %s", r.code, r.stderr)
	}
	if got, _ := os.ReadFile(out2); !bytes.Equal(got, want) {
		t.Fatal("SOURCE_DATE_EPOCH build differs")
	}
}

func TestVerifyAndInspect(t *testing.T) {
	file := filepath.Join(testdata, "translate.ampb")
	for _, trust := range []string{samplePub("example-publisher"), "did:key:z6Mkkun6rSiirUQkSt2ALNoLxwdvrURajioRa5UPYsaG938F"} {
		r := runCLI(t, nil, "verify", file, "--trust", trust, "--json")
		if r.code != 0 || !strings.Contains(r.stdout, `"verified": true`) {
			t.Fatalf("verify with %s: %d %s %s", trust, r.code, r.stdout, r.stderr)
		}
	}
	// Wrong key.
	r := runCLI(t, nil, "verify", "--json", file, "--trust", samplePub("acme-publisher"))
	if r.code != 1 || errorCode(t, r) != "untrusted_key" {
		t.Fatalf("wrong key: %d %s", r.code, r.stdout)
	}
	// Tampered copy (tampering).
	data, _ := os.ReadFile(file)
	data[len(data)-10] ^= 1
	bad := filepath.Join(t.TempDir(), "bad.ampb")
	os.WriteFile(bad, data, 0o644)
	r = runCLI(t, nil, "verify", bad, "--trust", samplePub("example-publisher"), "--json")
	if r.code != 1 || errorCode(t, r) != "hash_mismatch" {
		t.Fatalf("tampered: %d %s", r.code, r.stdout)
	}
	// Usage: no --trust.
	if r := runCLI(t, nil, "verify", file); r.code != 2 || !strings.Contains(r.stderr, "hint:") {
		t.Fatalf("no trust: %d %s", r.code, r.stderr)
	}
	// Inspect needs no trust and says so.
	r = runCLI(t, nil, "inspect", file)
	if r.code != 0 || !strings.Contains(r.stdout, "NOT checked") || !strings.Contains(r.stdout, "org.example.translate.text:2.1.0") {
		t.Fatalf("inspect: %d %s", r.code, r.stdout)
	}
	r = runCLI(t, nil, "inspect", "--json", file)
	var s summary
	if err := json.Unmarshal([]byte(r.stdout), &s); err != nil || s.SignatureChecked || len(s.Capabilities) != 4 || len(s.Signatures) != 1 {
		t.Fatalf("inspect json: %v %+v", err, s)
	}
}

func TestBuildRefusals(t *testing.T) {
	key := sampleKey(t, "example-publisher")
	src := filepath.Join(testdata, "translate")
	out := filepath.Join(t.TempDir(), "x.ampb")
	// A key readable by others is refused (leaked key).
	leaky := filepath.Join(t.TempDir(), "leaky.pem")
	data, _ := os.ReadFile(key)
	os.WriteFile(leaky, data, 0o644)
	os.Chmod(leaky, 0o644)
	r := runCLI(t, nil, "build", src, "-o", out, "--key", leaky, "--json")
	if r.code != 1 || errorCode(t, r) != "insecure_key_file" {
		t.Fatalf("leaky key: %d %s", r.code, r.stdout)
	}
	if _, err := os.Stat(out); err == nil {
		t.Fatal("a failed build left an output file")
	}
	for name, args := range map[string][]string{
		"no key":       {"build", src, "-o", out},
		"bad hash":     {"build", src, "-o", out, "--key", key, "--hash", "md5"},
		"bad created":  {"build", src, "-o", out, "--key", key, "--created", "yesterday"},
		"two sources":  {"build", src, src, "-o", out, "--key", key},
		"unknown flag": {"build", src, "-o", out, "--key", key, "--sign-twice"},
	} {
		if r := runCLI(t, nil, args...); r.code != 2 {
			t.Errorf("%s: exit %d, want 2", name, r.code)
		}
	}
	// A source problem names the file.
	r = runCLI(t, nil, "build", filepath.Join(testdata, "keys"), "-o", out, "--key", key, "--json")
	if r.code != 1 || errorCode(t, r) != "invalid_source" || !strings.Contains(r.stdout, "bundle.json") {
		t.Fatalf("not a source folder: %d %s", r.code, r.stdout)
	}
}

func TestKeygen(t *testing.T) {
	dir := t.TempDir()
	key, pub := filepath.Join(dir, "k.pem"), filepath.Join(dir, "k.pub.pem")
	r := runCLI(t, nil, "keygen", "-o", key, "--pub", pub, "--json")
	if r.code != 0 {
		t.Fatalf("%d %s", r.code, r.stderr)
	}
	var out struct {
		DID string `json:"did"`
	}
	json.Unmarshal([]byte(r.stdout), &out)
	if !strings.HasPrefix(out.DID, "did:key:z6Mk") {
		t.Fatalf("did %q", out.DID)
	}
	if st, _ := os.Stat(key); st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", st.Mode())
	}
	// The new key builds a bundle that verifies with its public key and
	// with its did:key.
	bundleFile := filepath.Join(dir, "b.ampb")
	if r := runCLI(t, nil, "build", filepath.Join(testdata, "geo"), "-o", bundleFile, "--key", key); r.code != 0 {
		t.Fatalf("build: %s", r.stderr)
	}
	for _, trust := range []string{pub, out.DID} {
		if r := runCLI(t, nil, "verify", bundleFile, "--trust", trust); r.code != 0 {
			t.Fatalf("verify with %s: %s", trust, r.stderr)
		}
	}
	// Without --pub the public key is printed.
	r = runCLI(t, nil, "keygen", "-o", filepath.Join(dir, "k2.pem"))
	if r.code != 0 || !strings.Contains(r.stdout, "BEGIN PUBLIC KEY") {
		t.Fatalf("%d %s", r.code, r.stdout)
	}
}

// TestBuildRefusesASchemaLoop: a schema whose $ref loops inside its own
// document (validation would never end) is refused by build, naming the
// file, with the quick check (which compiles a schema whose $ref names a
// schema applying another $ref) and with --full-schema-check alike, and no
// output file is left.
func TestBuildRefusesASchemaLoop(t *testing.T) {
	src := filepath.Join(t.TempDir(), "translate")
	if err := os.CopyFS(src, os.DirFS(filepath.Join(testdata, "translate"))); err != nil {
		t.Fatal(err)
	}
	const loop = "schemas/common/loop.json"
	if err := os.WriteFile(filepath.Join(src, filepath.FromSlash(loop)), []byte(`{"$ref": "#"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	key := sampleKey(t, "example-publisher")
	out := filepath.Join(t.TempDir(), "loop.ampb")
	for _, extra := range [][]string{nil, {"--full-schema-check"}} {
		args := append([]string{"build", src, "-o", out, "--key", key, "--json"}, extra...)
		r := runCLI(t, nil, args...)
		if r.code != 1 || errorCode(t, r) != "invalid_source" || !strings.Contains(r.stdout, loop) || !strings.Contains(r.stdout, "loop") {
			t.Fatalf("build %v: %d %s", extra, r.code, r.stdout)
		}
		if _, err := os.Stat(out); err == nil {
			t.Fatal("a refused build left an output file")
		}
	}
}

// revokeTranslate writes a revocation of the translate sample's version 1,
// signed by its publisher, and returns the file.
func revokeTranslate(t *testing.T) string {
	t.Helper()
	stmt := filepath.Join(t.TempDir(), "revoke.cbor")
	mustRun(t, "revoke", "-o", stmt, "--scope", "org.example", "--revoke-bundle", translateID+"@1",
		"--key", sampleKey(t, "example-publisher"), "--created", "2026-11-22T00:00:00Z")
	return stmt
}

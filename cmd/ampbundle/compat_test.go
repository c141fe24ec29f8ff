package main

import (
	"bytes"
	"crypto/ed25519"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/bundlebuild"
	"github.com/ampbundle/ampbundle/capability"
	"github.com/ampbundle/ampbundle/compat"
	"github.com/ampbundle/ampbundle/keyfile"
)

type compatJSON struct {
	Matrices []compat.Matrix `json:"matrices"`
}

func cellOf(t *testing.T, m compat.Matrix, requester, provider string) compat.Cell {
	t.Helper()
	for _, c := range m.Cells {
		if c.Requester == requester && c.Provider == provider {
			return c
		}
	}
	t.Fatalf("no cell %s × %s", requester, provider)
	return compat.Cell{}
}

// TestCompatMatrixFromFileStoreAndBoth: the matrix of the translate sample
// from the verified file, from a store, and file against store, agree; a
// 1.x caller on a 2.x provider is incompatible with the rule and pointer
// named; an untrusted file is refused before any verdict.
func TestCompatMatrixFromFileStoreAndBoth(t *testing.T) {
	db := newStore(t)
	mustRun(t, "import", sampleFile("translate"), "--db", db)
	for _, args := range [][]string{
		{"compat", sampleFile("translate"), "--trust", samplePub("example-publisher")},
		{"compat", "--db", db, "--capability", "org.example.translate.text"},
		{"compat", sampleFile("translate"), "--trust", samplePub("example-publisher"), "--db", db, "--capability", "org.example.translate.text"},
	} {
		var doc compatJSON
		mustJSON(t, &doc, args...)
		if len(doc.Matrices) != 1 || strings.Join(doc.Matrices[0].Versions, " ") != "1.0.0 1.5.0 2.0.0 2.1.0" || len(doc.Matrices[0].Cells) != 16 {
			t.Fatalf("%v: %+v", args, doc.Matrices)
		}
		m := doc.Matrices[0]
		if c := cellOf(t, m, "2.0.0", "2.1.0"); c.Level != compat.LevelFull {
			t.Errorf("%v: 2.0.0 on 2.1.0 is %s", args, c.Level)
		}
		c := cellOf(t, m, "1.0.0", "2.0.0")
		found := false
		for _, f := range c.Input.Findings {
			found = found || (f.Rule == "required_added" && f.Pointer == "/required")
		}
		if c.Level != compat.LevelIncompatible || !found {
			t.Errorf("%v: 1.0.0 on 2.0.0: %+v", args, c)
		}
	}
	r := mustRun(t, "compat", sampleFile("translate"), "--trust", samplePub("example-publisher"))
	if !strings.Contains(r.stdout, "❌ incompatible") || !strings.Contains(r.stdout, "required_added at /required") {
		t.Fatalf("human output:\n%s", r.stdout)
	}
	bad := runCLI(t, nil, "compat", sampleFile("translate"), "--trust", samplePub("acme-publisher"), "--json")
	if bad.code != 1 || errorCode(t, bad) != "untrusted_key" {
		t.Fatalf("untrusted file: %d %s", bad.code, bad.stdout)
	}
	if u := runCLI(t, nil, "compat"); u.code != 2 {
		t.Fatalf("no input: exit %d", u.code)
	}
}

// TestFalseCompatibilityClaimEndToEnd: through the CLI, build refuses a
// range policy its schemas contradict, and import refuses a signed bundle
// whose claims were forged after the checker ran (exit 1, nothing
// installed).
func TestFalseCompatibilityClaimEndToEnd(t *testing.T) {
	src := filepath.Join(t.TempDir(), "translate")
	if err := os.CopyFS(src, os.DirFS(filepath.Join(testdata, "translate"))); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(src, "capabilities", "org.example.translate.text", "2.1.0", "capability.json")
	in := filepath.Join(src, "capabilities", "org.example.translate.text", "2.1.0", "input.schema.json")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(cfg, []byte(`{"policy": "range", "supported_ranges": [">=2.0.0 <2.2.0"]}`), 0o644))
	orig, err := os.ReadFile(in)
	must(err)
	stricter := bytes.Replace(orig, []byte(`"target"
  ],`), []byte(`"target",
    "formality"
  ],`), 1)
	if bytes.Equal(stricter, orig) {
		t.Fatal("the fixture edit did not apply")
	}
	must(os.WriteFile(in, stricter, 0o644))
	out := filepath.Join(t.TempDir(), "x.ampb")
	r := runCLI(t, nil, "build", src, "-o", out, "--key", sampleKey(t, "example-publisher"), "--created", "2026-11-10T00:00:00Z", "--json")
	if r.code != 1 || errorCode(t, r) != "compatibility_claim_unproven" {
		t.Fatalf("build: %d %s", r.code, r.stdout)
	}
	if _, err := os.Stat(out); err == nil {
		t.Fatal("a refused build left a file")
	}

	// The same bundle built as strict (claims say incompatible), then
	// forged into a range policy with compatible claims and re-signed.
	must(os.WriteFile(cfg, []byte(`{"policy": "strict", "supported_ranges": [">=2.0.0 <2.2.0"]}`), 0o644))
	keyPEM, err := os.ReadFile(filepath.Join(testdata, "keys", "TEST-ONLY-example-publisher.key.pem"))
	must(err)
	k, err := keyfile.ParsePrivate(keyPEM)
	must(err)
	d, err := bundlebuild.LoadSource(src, bundlebuild.SourceOptions{CreatedAt: cliNow.Add(-time.Hour), Signer: k.Ed25519.Public().(ed25519.PublicKey)})
	must(err)
	for i := range d.Capabilities {
		if d.Capabilities[i].Version.String() == "2.1.0" {
			d.Capabilities[i].Policy = capability.PolicyRange
			for j := range d.Capabilities[i].CompatClaims {
				d.Capabilities[i].CompatClaims[j].Input = capability.VerdictCompatible
				d.Capabilities[i].CompatClaims[j].Output = capability.VerdictCompatible
			}
		}
	}
	var buf bytes.Buffer
	_, err = bundle.Write(&buf, d, []ed25519.PrivateKey{k.Ed25519}, bundle.WriteOptions{})
	must(err)
	must(os.WriteFile(out, buf.Bytes(), 0o644))
	db := newStore(t)
	r = runCLI(t, nil, "import", out, "--db", db, "--json")
	if r.code != 1 || errorCode(t, r) != "false_compatibility_claim" {
		t.Fatalf("import: %d %s", r.code, r.stdout)
	}
	var ls lsJSON
	mustJSON(t, &ls, "ls", "--db", db)
	if len(ls.Bundles) != 0 {
		t.Fatalf("a refused bundle was installed: %+v", ls.Bundles)
	}
}

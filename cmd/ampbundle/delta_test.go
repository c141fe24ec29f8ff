package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// translateV2Source is the translate sample as version 2 with one changed
// schema.
func translateV2Source(t *testing.T) string {
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
	data = bytes.Replace(data, []byte(`"version": 1,`), []byte(`"version": 2,`), 1)
	if err := os.WriteFile(manifest, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "schemas", "common", "text.json"), []byte(`{"type":"string","minLength":1,"maxLength":100}`), 0o644); err != nil {
		t.Fatal(err)
	}
	return src
}

// TestDeltaBuildImportExport: build --base and --base-from-db write the
// same delta; verify of the delta alone names what needs the base; import
// into a store without the base fails as delta_base_missing and changes
// nothing; import over the base, then export, gives the full build byte
// for byte.
func TestDeltaBuildImportExport(t *testing.T) {
	key := sampleKey(t, "example-publisher")
	src := translateV2Source(t)
	dir := t.TempDir()
	full, delta, delta2 := filepath.Join(dir, "full.ampb"), filepath.Join(dir, "delta.ampb"), filepath.Join(dir, "delta2.ampb")
	created := "2026-11-10T00:00:00Z"
	mustRun(t, "build", src, "-o", full, "--key", key, "--created", created)
	var built struct {
		Size  int64     `json:"size"`
		Delta deltaJSON `json:"delta"`
	}
	mustJSON(t, &built, "build", src, "-o", delta, "--key", key, "--created", created, "--base", sampleFile("translate"))
	if built.Delta.BaseVersion != 1 || built.Delta.Omitted == 0 {
		t.Fatalf("build --base: %+v", built)
	}
	db := storeWithSamples(t)
	mustRun(t, "build", src, "-o", delta2, "--key", key, "--created", created, "--base-from-db", db)
	d1, _ := os.ReadFile(delta)
	d2, _ := os.ReadFile(delta2)
	fullBytes, _ := os.ReadFile(full)
	if !bytes.Equal(d1, d2) || len(d1) >= len(fullBytes) {
		t.Fatalf("--base and --base-from-db deltas differ (%d, %d bytes; full %d)", len(d1), len(d2), len(fullBytes))
	}
	var ver struct {
		Verified  bool      `json:"verified"`
		NeedsBase bool      `json:"needs_base"`
		Delta     deltaJSON `json:"delta"`
	}
	mustJSON(t, &ver, "verify", delta, "--trust", samplePub("example-publisher"))
	if !ver.Verified || !ver.NeedsBase || ver.Delta.Omitted != built.Delta.Omitted {
		t.Fatalf("verify delta: %+v", ver)
	}
	// With --base the omitted artifacts are verified too, against the
	// verified base; a base that is not the one named is refused.
	mustJSON(t, &ver, "verify", delta, "--trust", samplePub("example-publisher"), "--base", sampleFile("translate"))
	if !ver.Verified || ver.NeedsBase {
		t.Fatalf("verify delta --base: %+v", ver)
	}
	failsWith(t, "delta_base_missing", "verify", delta, "--trust", samplePub("example-publisher"), "--base", full)
	if r := runCLI(t, nil, "verify", full, "--trust", samplePub("example-publisher"), "--base", full); r.code != 2 {
		t.Fatalf("verify FULL --base: exit %d", r.code)
	}
	empty := newStore(t)
	failsWith(t, "delta_base_missing", "import", delta, "--db", empty)
	var res importJSON
	mustJSON(t, &res, "import", delta, "--db", db)
	if res.Version != 2 || res.PreviousVersion != 1 || res.Delta == nil || res.Delta.FromBase != built.Delta.Omitted {
		t.Fatalf("import delta: %+v", res)
	}
	out := filepath.Join(dir, "export.ampb")
	mustRun(t, "export", "org.example.translate", "--db", db, "-o", out)
	if got, _ := os.ReadFile(out); !bytes.Equal(got, fullBytes) {
		t.Fatal("export after a delta import is not the full build byte for byte")
	}
	// inspect shows the delta and the full manifest it carries.
	var in summary
	mustJSON(t, &in, "inspect", delta)
	if in.Delta == nil || in.Delta.Omitted != built.Delta.Omitted || in.Version != 2 {
		t.Fatalf("inspect of a delta: %+v", in)
	}
	// A delta serves as the base of the next delta: its item 1 is the
	// signed manifest the store holds after importing it.
	v3 := filepath.Join(dir, "v3.delta.ampb")
	data, _ := os.ReadFile(filepath.Join(src, "bundle.json"))
	os.WriteFile(filepath.Join(src, "bundle.json"), bytes.Replace(data, []byte(`"version": 2,`), []byte(`"version": 3,`), 1), 0o644)
	mustRun(t, "build", src, "-o", v3, "--key", key, "--created", created, "--base", delta)
	mustJSON(t, &res, "import", v3, "--db", db)
	if res.Version != 3 || res.Delta == nil || res.Delta.BaseVersion != 2 {
		t.Fatalf("import of a delta built over a delta: %+v", res)
	}
	r := runCLI(t, nil, "build", src, "-o", delta, "--key", key, "--base", full, "--base-from-db", db)
	if r.code != 2 {
		t.Fatalf("--base with --base-from-db: exit %d", r.code)
	}
}

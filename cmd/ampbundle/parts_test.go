package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// bigTranslate builds the translate sample with one extra 300 KB schema.
func bigTranslate(t *testing.T) string {
	t.Helper()
	src := filepath.Join(t.TempDir(), "translate")
	if err := os.CopyFS(src, os.DirFS(filepath.Join(testdata, "translate"))); err != nil {
		t.Fatal(err)
	}
	big := `{"description":"` + strings.Repeat("filler ", 300<<10/7) + `"}`
	if err := os.WriteFile(filepath.Join(src, "schemas", "big.json"), []byte(big), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "big.ampb")
	mustRun(t, "build", src, "-o", out, "--key", sampleKey(t, "example-publisher"), "--created", "2026-11-10T00:00:00Z")
	return out
}

// TestSplitVerifyImportJoin: split into parts over two folders; verify and
// import read the parts in place; join gives the original bytes; a missing
// or truncated part is named.
func TestSplitVerifyImportJoin(t *testing.T) {
	file := bigTranslate(t)
	want, _ := os.ReadFile(file)
	dir := t.TempDir()
	var res struct {
		Index string `json:"index"`
		Parts []struct {
			File string `json:"file"`
		} `json:"parts"`
	}
	mustJSON(t, &res, "split", file, "--size", "64K", "--key", sampleKey(t, "example-publisher"), "--out-dir", dir)
	if len(res.Parts) != (len(want)+65535)/65536 || res.Index != filepath.Join(dir, "big.ampb.parts") {
		t.Fatalf("split: %+v", res)
	}
	mount2 := t.TempDir()
	for i, p := range res.Parts {
		if i%2 == 0 {
			if err := os.Rename(p.File, filepath.Join(mount2, filepath.Base(p.File))); err != nil {
				t.Fatal(err)
			}
		}
	}
	pub := samplePub("example-publisher")
	var ver struct {
		Verified bool `json:"verified"`
	}
	mustJSON(t, &ver, "verify", res.Index, mount2, dir, "--trust", pub)
	if !ver.Verified {
		t.Fatal("verify of the parts")
	}
	failsWith(t, "untrusted_key", "verify", res.Index, mount2, dir, "--trust", samplePub("acme-publisher"))
	db := newStore(t)
	var imp importJSON
	mustJSON(t, &imp, "import", res.Index, dir, mount2, "--db", db)
	if imp.BundleID != translateID {
		t.Fatalf("import of the parts: %+v", imp)
	}
	out := filepath.Join(t.TempDir(), "joined.ampb")
	mustRun(t, "join", res.Index, mount2, dir, "-o", out, "--trust", pub)
	if got, _ := os.ReadFile(out); !bytes.Equal(got, want) {
		t.Fatal("join did not recreate the original bytes")
	}
	// A missing part, then a truncated one.
	second := res.Parts[1].File
	data, _ := os.ReadFile(second)
	os.Remove(second)
	r := failsWith(t, "part_missing", "verify", res.Index, mount2, dir, "--trust", pub)
	if !strings.Contains(r.stdout, "big.ampb.part002") {
		t.Fatalf("the missing part is not named: %s", r.stdout)
	}
	os.WriteFile(second, data[:len(data)/2], 0o644)
	r = failsWith(t, "part_mismatch", "import", res.Index, mount2, dir, "--db", newStore(t))
	if !strings.Contains(r.stdout, "part002") {
		t.Fatalf("the truncated part is not named: %s", r.stdout)
	}
	if r := runCLI(t, nil, "split", file, "--size", "1K", "--key", sampleKey(t, "example-publisher")); r.code != 2 {
		t.Fatalf("split --size 1K: exit %d", r.code)
	}
}

package main

import (
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/compat"
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

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRmThenExport: a removed bundle is gone (export fails, nothing is
// written) and its high-water mark stays (the same version is a rollback).
func TestRmThenExport(t *testing.T) {
	db := storeWithSamples(t)
	r := mustRun(t, "rm", translateID, "--db", db)
	if !strings.Contains(r.stdout, "removed org.example.translate version 1\n") ||
		!strings.Contains(r.stdout, "high-water mark stays at version 1") || !strings.Contains(r.stdout, "--allow-downgrade") {
		t.Fatalf("rm: %s", r.stdout)
	}
	out := filepath.Join(t.TempDir(), "t.ampb")
	failsWith(t, "unknown_bundle", "export", translateID, "--db", db, "-o", out)
	if entries, _ := os.ReadDir(filepath.Dir(out)); len(entries) != 0 {
		t.Fatalf("a failed export left %v", entries)
	}
	failsWith(t, "rollback", "import", sampleFile("translate"), "--db", db)
	failsWith(t, "unknown_bundle", "rm", translateID, "--db", db)
	if r := runCLI(t, nil, "rm", translateID, "--db", db); !strings.Contains(r.stderr, "hint: 'ampbundle ls --db "+db+"' lists the installed bundles") {
		t.Fatalf("unknown bundle hint: %s", r.stderr)
	}
	// Flags before the argument; JSON.
	var res struct {
		Removed        string `json:"removed"`
		Version        uint64 `json:"version"`
		HighestVersion uint64 `json:"highest_version"`
		Generation     uint64 `json:"generation"`
	}
	mustJSON(t, &res, "rm", "--db", db, geoID)
	if res.Removed != geoID || res.Version != 4 || res.HighestVersion != 4 || res.Generation != 6 {
		t.Fatalf("rm json: %+v", res)
	}
	var ls lsJSON
	mustJSON(t, &ls, "ls", "--db", db)
	if len(ls.Bundles) != 0 || len(ls.Capabilities) != 0 || len(ls.Aliases) != 0 {
		t.Fatalf("after rm: %+v", ls)
	}
	mustRun(t, "check", "--db", db)
	// Back in with --allow-downgrade.
	mustRun(t, "import", sampleFile("translate"), "--db", db, "--allow-downgrade")
	if r := runCLI(t, nil, "rm", "--db", db); r.code != 2 {
		t.Fatalf("rm without an id: exit %d", r.code)
	}
}

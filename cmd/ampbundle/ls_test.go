package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestLs(t *testing.T) {
	db := newStore(t)
	if r := mustRun(t, "ls", "--db", db); r.stdout != "no bundles installed\n" {
		t.Fatalf("empty store: %q", r.stdout)
	}
	var empty lsJSON
	mustJSON(t, &empty, "ls", "--db", db)
	if empty.Bundles == nil || empty.Capabilities == nil || empty.Aliases == nil || len(empty.Bundles) != 0 {
		t.Fatalf("empty store json: %+v", empty)
	}
	mustRun(t, "import", sampleFile("geo"), "--db", db)
	mustRun(t, "import", translateVersion(t, 2), "--db", db)
	mustRun(t, "import", sampleFile("translate"), "--db", db, "--allow-downgrade")
	var ls lsJSON
	mustJSON(t, &ls, "ls", "--db", db)
	if len(ls.Bundles) != 2 || ls.Generation != 5 {
		t.Fatalf("ls: %+v", ls)
	}
	geo, tr := ls.Bundles[0], ls.Bundles[1]
	geoCount, geoBytes, _ := artifactTotals(t, "geo")
	trCount, trBytes, _ := artifactTotals(t, "translate")
	if geo.BundleID != geoID || geo.Version != 4 || geo.HighestVersion != 4 || geo.Artifacts != geoCount || geo.Bytes != geoBytes ||
		geo.ExpiresAt != "" || strings.Join(geo.Signers, ",") != "acme" || geo.ImportedAt != "2026-11-22T12:00:00Z" {
		t.Fatalf("geo: %+v", geo)
	}
	if tr.BundleID != translateID || tr.Version != 1 || tr.HighestVersion != 2 || tr.Artifacts != trCount || tr.Bytes != trBytes ||
		tr.ExpiresAt != "2036-01-01T00:00:00Z" || strings.Join(tr.Signers, ",") != "example" {
		t.Fatalf("translate: %+v", tr)
	}
	var names []string
	for _, c := range ls.Capabilities {
		names = append(names, c.Name)
	}
	if strings.Join(names, " ") != "com.acme.geo.distance com.acme.geo.geocode org.example.translate.text" {
		t.Fatalf("capabilities: %v", names)
	}
	text := ls.Capabilities[2]
	if len(text.Versions) != 4 || text.Versions[0].Version != "1.0.0" || text.Versions[3].Version != "2.1.0" || text.Versions[0].BundleID != translateID {
		t.Fatalf("versions: %+v", text.Versions)
	}
	schema, err := os.ReadFile(filepath.Join(testdata, "translate", schemaKey100))
	if err != nil {
		t.Fatal(err)
	}
	ref := text.Versions[0].OutputSchema
	if ref.BundleID != translateID || ref.ArtifactKey != schemaKey100 || ref.HashAlg != "sha-256" || ref.Hash != sha256hex(schema) {
		t.Fatalf("schema ref: %+v", ref)
	}
	if len(ls.Aliases) != 1 || ls.Aliases["translate"] != "org.example.translate.text" {
		t.Fatalf("aliases: %v", ls.Aliases)
	}
	// Human form; flags before and after.
	r := mustRun(t, "ls", "--db", db)
	for _, want := range []string{
		"com.acme.geo version 4 (highest ever 4)\n",
		"org.example.translate version 1 (highest ever 2)\n  imported   2026-11-22T12:00:00Z\n  expires    2036-01-01T00:00:00Z\n  signed by  example\n" +
			"  artifacts  " + strconv.FormatUint(trCount, 10) + " (" + strconv.FormatUint(trBytes, 10) + " bytes)\n",
		"capabilities 3\n",
		"  org.example.translate.text  1.0.0, 1.5.0, 2.0.0, 2.1.0 (org.example.translate)\n",
		"  com.acme.geo.geocode        1.0.0 (com.acme.geo)\n",
		"alias  translate -> org.example.translate.text\n",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("ls: missing %q in\n%s", want, r.stdout)
		}
	}
	if r := runCLI(t, nil, "ls", "extra", "--db", db); r.code != 2 {
		t.Fatalf("ls with an argument: exit %d", r.code)
	}
	if r := runCLI(t, nil, "ls"); r.code != 2 || !strings.Contains(r.stderr, "--db") {
		t.Fatalf("ls without --db: %d %s", r.code, r.stderr)
	}
}

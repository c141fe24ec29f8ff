package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestImportFromAnOCILayoutIsRefusedAndWarnedAsAFileImportIs: 'import
// oci-layout:…' (or oci://…) and 'import FILE' hand the bundle to the
// store through one call (importBundle), so the import flags and the
// expiry warning act alike whatever the source (threat: an import path
// that drops --allow-downgrade's audit, or installs a bundle expiring
// in days without a word, because one copy of the call was changed and
// the other not). For each source: a rollback is refused without
// --allow-downgrade and accepted as a downgrade with it; a bundle
// expiring within --expiry-warning is warned of; the progress is drawn
// on a terminal.
func TestImportFromAnOCILayoutIsRefusedAndWarnedAsAFileImportIs(t *testing.T) {
	v3, v1 := translateVersion(t, 3), sampleFile("translate")
	expiring := translateExpiring(t, cliNow.Add(3*24*time.Hour))
	layout := filepath.Join(t.TempDir(), "layout")
	mustRun(t, "push", v3, "oci-layout:"+layout+":v3")
	mustRun(t, "push", v1, "oci-layout:"+layout+":v1")
	mustRun(t, "push", expiring, "oci-layout:"+layout+":v7")
	sources := []struct {
		name                   string
		newer, older, expiring string
	}{
		{"file", v3, v1, expiring},
		{"oci-layout", "oci-layout:" + layout + ":v3", "oci-layout:" + layout + ":v1", "oci-layout:" + layout + ":v7"},
	}
	for _, src := range sources {
		t.Run(src.name, func(t *testing.T) {
			db := newStore(t)
			mustRun(t, "import", src.newer, "--db", db)
			failsWith(t, "rollback", "import", src.older, "--db", db)
			var res importJSON
			mustJSON(t, &res, "import", src.older, "--allow-downgrade", "--db", db)
			if !res.Downgrade || res.Version != 1 || res.PreviousVersion != 3 || !strings.Contains(res.Warning, "downgrade") {
				t.Fatalf("import --allow-downgrade: %+v; want a downgrade from 3 to 1", res)
			}
			r := mustRun(t, "import", src.expiring, "--db", newStore(t))
			if !strings.Contains(r.stderr, "WARNING: org.example.translate version 7 expires in 3 d (at 2026-11-25T12:00:00Z)") {
				t.Fatalf("import of a bundle expiring in 3 days: stderr %q; want the expiry warning", r.stderr)
			}
			r = runTTY(t, "import", src.newer, "--db", newStore(t))
			if r.code != 0 || !strings.Contains(r.stderr, "importing 100%") {
				t.Fatalf("import on a terminal: exit %d, stderr %q; want the progress to 100%%", r.code, r.stderr)
			}
		})
	}
}

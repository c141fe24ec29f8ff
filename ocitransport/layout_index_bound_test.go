package ocitransport_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/ocitransport"
)

// TestLayoutIndexReadUnderTheLockKeepsTheConfiguredBound: the attack.
// A writer opened with a bound on manifests (Options.MaxManifestSize,
// which bounds index.json at the open) read index.json again, under the
// lock, bounded by the default 4 MiB: another user of the folder who
// replaced it after the open had the writer read and decode up to 4 MiB
// the operator had refused. It is now read under the configured bound:
// oci_manifest_too_large, index.json left as it was
// (docs/SPEC-DECISIONS.md OCI-24).
func TestLayoutIndexReadUnderTheLockKeepsTheConfiguredBound(t *testing.T) {
	const bound = 2048
	dir := filepath.Join(t.TempDir(), "layout")
	ep := mustOpen(t, "oci-layout:"+dir, ocitransport.Options{MaxManifestSize: bound}, ocitransport.ReadWrite)
	big := `{"schemaVersion":2,"manifests":[],"annotations":{"pad":"` + strings.Repeat("x", bound) + `"}}`
	p := filepath.Join(dir, "index.json")
	if err := os.WriteFile(p+".new", []byte(big), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(p+".new", p); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(sampleBundle)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	_, err = ep.PushBundle(t.Context(), f, "translate.ampb", "v1")
	if nameOf(err) != string(ocitransport.ErrManifestTooBig) {
		t.Errorf("an index.json over the configured bound, read under the lock: %v, want %s", err, ocitransport.ErrManifestTooBig)
	}
	if string(mustRead(t, p)) != big {
		t.Errorf("index.json over the bound was rewritten")
	}
}

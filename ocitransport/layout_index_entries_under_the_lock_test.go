package ocitransport_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/ocitransport"
)

// TestLayoutIndexReadUnderTheLockWithTooManyEntriesIsRefused: the
// attack. A layout's writer checks index.json at the open (at most
// MaxTags entries, each member once, OCI-10) but read it again under the
// lock, to change it, with json.Unmarshal and only a byte bound: another
// user of the folder who replaced it after the open (4 MiB of "{},"
// entries: some 1.4 million descriptors) had the writer decode every
// entry and write them all back, an index.json no reader opens. It is now
// read under the open's bounds: nothing is written, index.json is left as
// it was (docs/SPEC-DECISIONS.md OCI-33).
func TestLayoutIndexReadUnderTheLockWithTooManyEntriesIsRefused(t *testing.T) {
	for _, tc := range []struct {
		name  string
		index string
		want  amp.ErrName
	}{
		{"one entry more than MaxTags", `{"schemaVersion":2,"manifests":[` + strings.Repeat(`{},`, ocitransport.DefaultMaxTags) + `{}]}`, ocitransport.ErrTooMany},
		{"the manifests member twice", `{"schemaVersion":2,"manifests":[],"Manifests":[{}]}`, ocitransport.ErrLayout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "layout")
			ep := mustOpen(t, "oci-layout:"+dir, ocitransport.Options{}, ocitransport.ReadWrite)
			p := filepath.Join(dir, "index.json")
			if err := os.WriteFile(p+".new", []byte(tc.index), 0o644); err != nil {
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
			if nameOf(err) != string(tc.want) {
				t.Errorf("an index.json put in place after the open (%s), read under the lock: %v, want %s", tc.name, err, tc.want)
			}
			if got := mustRead(t, p); string(got) != tc.index {
				t.Errorf("index.json (%s) was rewritten: %d bytes, was %d", tc.name, len(got), len(tc.index))
			}
		})
	}
}

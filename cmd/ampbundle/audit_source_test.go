package main

import (
	"encoding/json"
	"testing"

	"github.com/ampbundle/ampbundle/resolver"
)

// TestAuditJSONKeepsWhereAnImportCameFrom: an auditor reading `audit
// --json` (or `receipt verify --json`) must see the source the log recorded
// for an import (the mirror URL of `sync`), as docs/CLI.md documents; a view
// that dropped it would hide where a bundle came from.
func TestAuditJSONKeepsWhereAnImportCameFrom(t *testing.T) {
	for _, tc := range []struct {
		source string
		want   bool
	}{
		{"https://mirror.example/bundles/a.ampb", true},
		{"", false},
	} {
		raw, err := json.Marshal(auditView(resolver.AuditEntry{Seq: 1, Action: "import", BundleID: "org.example", Version: 2, Source: tc.source}))
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		got, has := m["source"]
		if has != tc.want || (has && got != tc.source) {
			t.Fatalf("source %q: audit JSON %s", tc.source, raw)
		}
	}
}

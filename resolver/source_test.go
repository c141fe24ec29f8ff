package resolver

import (
	"strings"
	"testing"
)

// The import source goes into the audit log verbatim: a caller (an admin
// socket client, a sync) must not be able to write control characters or
// an unbounded string into it, and a refused source must change nothing.
func TestImportSourceCannotForgeAuditText(t *testing.T) {
	for _, tc := range []struct {
		name, source string
		ok           bool
	}{
		{"a mirror url", "http://10.0.0.5:8470/bundles/org.example.translate", true},
		{"newline to forge a log line", "http://m/x\nimport accepted", false},
		{"escape sequence", "http://m/\x1b[2J", false},
		{"space", "http://m/ x", false},
		{"non-ascii", "http://m/\u00e9", false},
		{"too long", "http://m/" + strings.Repeat("a", MaxSourceBytes), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStore(t)
			before := dump(t, s)
			_, err := importBytes(t, s, sampleBytes(t, "translate"), ImportOptions{Source: tc.source})
			if !tc.ok {
				expectName(t, err, ErrBadSource)
				if dump(t, s) != before {
					t.Fatal("a refused source changed the store")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if e := lastAudit(t, s); e.Source != tc.source || e.Action != "import" {
				t.Fatalf("audit %+v, want source %q", e, tc.source)
			}
		})
	}
}

package admin

import (
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/resolver"
)

// TestStatementAndRefusalQueriesWhoseSumIsNotSHA256AreRefused: GET
// /v1/statements/has and GET /v1/refused take a SHA-256 from the
// caller's query, read through one rule (readingSum, by fileSum as an
// import's file_sha256 is). Anything but 64 hex digits (threat: a short
// or long sum matching a prefix, or text the store would key its
// records by) is refused bad_request before the store is asked; a sum
// of 64 hex digits is asked, in either case.
func TestStatementAndRefusalQueriesWhoseSumIsNotSHA256AreRefused(t *testing.T) {
	s, err := resolver.Open(filepath.Join(t.TempDir(), "store.db"), resolver.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sum := sha256.Sum256([]byte("statement"))
	good := strings.Repeat("ab", sha256.Size)
	ops := map[string]func(sum string) error{
		"HasStatement": func(h string) error { _, err := opHasStatement().Run(s, hasRequest{SHA256: h}); return err },
		"RefusedAt":    func(h string) error { _, err := opRefusedAt().Run(s, hasRequest{SHA256: h}); return err },
	}
	tests := []struct {
		name, sum string
		refused   bool
	}{
		{"empty", "", true},
		{"63 hex digits", good[:63], true},
		{"62 hex digits", good[:62], true},
		{"66 hex digits", good + "00", true},
		{"not hex", strings.Repeat("zz", sha256.Size), true},
		{"upper-case hex", strings.ToUpper(good), false},
		{"64 hex digits", good, false},
		{"a statement's sum", hex.EncodeToString(sum[:]), false},
	}
	for name, op := range ops {
		for _, tt := range tests {
			err := op(tt.sum)
			if tt.refused && amp.NameOf(err) != "bad_request" {
				t.Errorf("%s with %s: %v; want bad_request", name, tt.name, err)
			}
			if !tt.refused && err != nil {
				t.Errorf("%s with %s: %v; want an answer", name, tt.name, err)
			}
		}
	}
}

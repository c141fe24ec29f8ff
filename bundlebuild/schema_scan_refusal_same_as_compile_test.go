package bundlebuild

import (
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/internal/offlineschema"
)

// TestSchemaRefusedFromItsBytesGetsTheCompilesOwnVerdict: the build
// refuses a schema over a per-document compile limit from a scan of its
// bytes, unparsed (BUILD-7), "with the compile's error". The scan counted
// only braces, brackets and depth, on any bytes: a schema that is not
// valid JSON but holds more than 10,000 '{' or 128 unclosed '[' was
// refused as over a compile limit, where the compile (and the build
// without the scan) says it is not valid JSON; and one over a limit that
// also holds a number past the value model's caps earlier in its bytes
// (or anywhere, with 10,001 objects) was given the object or nesting
// limit where the compile names the number (threat: a publisher told to
// split a schema that is merely malformed, or to flatten one whose fault
// is a number; the error the build gives depending on whether the scan or
// the compile saw the schema first). Expected: for every input, the
// build's error is the one it gives without the scan (a valid JSON
// document: the compile's message; an invalid one: "is not a json schema
// object"), and a schema whose strings hold braces, brackets and escaped
// quotes is not refused at all.
func TestSchemaRefusedFromItsBytesGetsTheCompilesOwnVerdict(t *testing.T) {
	const key = "schemas/flood/s.json"
	objects := func(n int) string { return strings.Repeat(`{},`, n-1) + `{}` }
	for _, tt := range []struct {
		name   string
		schema string
	}{
		{"a long number before nesting past 128", `{"const":1` + strings.Repeat("0", 120) + `,"not":` +
			strings.Repeat(`[`, 200) + strings.Repeat(`]`, 200) + `}`},
		{"a large exponent after 10,001 objects", `{"enum":[` + objects(10001) + `],"const":1e500}`},
		{"not json: 200 unclosed brackets", `{"enum":` + strings.Repeat(`[`, 200)},
		{"not json: 10,001 objects, never closed", `{"enum":[` + objects(10001)},
		{"not json: nesting past 128 after a stray closer", `{"enum":]` + strings.Repeat(`[`, 200) + strings.Repeat(`]`, 200) + `}`},
		{"braces and escaped quotes in strings", `{"enum":["` + strings.Repeat(`{[\"\\`, 20000) + `"]}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var want string // "" when the build must succeed
			if !json.Valid([]byte(tt.schema)) {
				want = key + ": is not a json schema object"
			} else if _, err := offlineschema.Compile(oneSchemaLoader{key, []byte(tt.schema)}, key, offlineschema.Options{}); err != nil {
				want = key + ": " + amp.AsError(err).Message
			}
			for _, full := range []bool{false, true} {
				dir := copyTree(t, filepath.Join("..", "testdata", "bundles", "translate"))
				write(t, dir, key, tt.schema)
				k := testKey(1)
				_, err := LoadSource(dir, SourceOptions{CreatedAt: time.Unix(1_700_000_000, 0), Signer: k.Public().(ed25519.PublicKey),
					Workers: 1, FullSchemaCheck: full})
				switch {
				case want == "" && err != nil:
					t.Fatalf("full=%v: a schema the compile accepts was refused: %v", full, err)
				case want != "" && (!errors.Is(err, bundle.ErrSource) || amp.AsError(err).Message != want):
					t.Fatalf("full=%v: got %v, want %s with the message %q", full, err, bundle.ErrSource, want)
				}
			}
		})
	}
}

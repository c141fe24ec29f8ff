package bundlebuild

import (
	"crypto/ed25519"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/internal/offlineschema"
	"github.com/ampbundle/ampbundle/internal/testalloc"
)

// oneSchemaLoader serves one schema document to offlineschema.Compile.
type oneSchemaLoader struct {
	key  string
	data []byte
}

func (l oneSchemaLoader) Load(key string) ([]byte, error) {
	if key != l.key {
		return nil, errors.New("no such schema")
	}
	return l.data, nil
}

func (oneSchemaLoader) KeyForID(string) (string, bool) { return "", false }

// TestSchemaOverObjectLimitParsedBeforeRefused: anyone who can write in
// the source folder adds a 4 MiB schema of empty objects
// ({"enum":[{},{},…]}, about 1.4 million objects). A document over a
// per-document compile limit (offlineschema.MaxCompileObjects, 10,000
// objects; MaxSchemaNesting, 128 deep) can never be compiled, yet the
// first read parsed it whole into encoding/json's tree (about 156 MiB of
// heap for this one) before the compile-limit scan, which runs after the
// parse, marked it for the compile that refused it. Expected: the build
// scans the bytes first and refuses such a schema unparsed, naming it,
// with the error the compile gives (invalid_source, the compile's
// invalid_schema message), allocating little more than the file's bytes.
func TestSchemaOverObjectLimitParsedBeforeRefused(t *testing.T) {
	const key = "schemas/flood/s.json"
	for _, tt := range []struct {
		name   string
		schema string
		alloc  uint64 // the most LoadSource may allocate
	}{
		{"empty objects", repeatSchema(`{"enum":[`, `{}`, `,`, `]}`, 4<<20, 1<<30), 24 << 20},
		{"one-member objects", repeatSchema(`{"enum":[`, `{"":0}`, `,`, `]}`, 4<<20, 1<<30), 24 << 20},
		{"nested past 128", strings.Repeat(`{"not":`, 2000) + `{}` + strings.Repeat(`}`, 2000), 8 << 20},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, want := offlineschema.Compile(oneSchemaLoader{key, []byte(tt.schema)}, key, offlineschema.Options{})
			if !errors.Is(want, offlineschema.ErrInvalidSchema) {
				t.Fatalf("precondition: the compile of the schema gave %v, want %s", want, offlineschema.ErrInvalidSchema)
			}
			for _, full := range []bool{false, true} {
				dir := copyTree(t, filepath.Join("..", "testdata", "bundles", "translate"))
				write(t, dir, key, tt.schema)
				k := testKey(1)
				opts := SourceOptions{CreatedAt: time.Unix(1_700_000_000, 0), Signer: k.Public().(ed25519.PublicKey), Workers: 1, FullSchemaCheck: full}
				var err error
				grew := testalloc.Least(func() { _, err = LoadSource(dir, opts) })
				if !errors.Is(err, bundle.ErrSource) || amp.AsError(err).Message != key+": "+amp.AsError(want).Message {
					t.Fatalf("full=%v: got %v, want %s naming %s with the compile's message %q", full, err, bundle.ErrSource, key, amp.AsError(want).Message)
				}
				if grew > tt.alloc {
					t.Fatalf("full=%v: a %d-byte schema that can never compile made LoadSource allocate %d MiB (at most %d MiB): it was parsed before it was refused",
						full, len(tt.schema), grew>>20, tt.alloc>>20)
				}
			}
		})
	}
}

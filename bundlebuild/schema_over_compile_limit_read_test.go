package bundlebuild

import (
	"bytes"
	"crypto/ed25519"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/internal/offlineschema"
	"github.com/ampbundle/ampbundle/internal/testalloc"
)

// TestSchemaOverCompileLimitReadAndParsed: the attack: anyone who
// can write in the source folder (BUILD-4's adversary) adds a schema file
// of 16 MiB, the walk's bound for any source file. A schema document over
// offlineschema.MaxCompileBytes (4 MiB) can never be built: the linear
// check vouches for no schema over a compile limit and Compile refuses it.
// Before review 111 the file was still read whole, hashed and parsed into
// encoding/json's tree (up to ~24 bytes of heap per byte for a document of
// small values), and its size set "the largest schema", so the in-flight
// budget and the memory limit the command holds (64 MiB + 4 × largest ×
// workers) grew four times for a file refused anyway. Expected: the walk
// sizes a schema file against MaxCompileBytes and refuses a larger one
// unread, naming it, as it does an oversized bridge or DID document
// (docs/SPEC-DECISIONS.md, BUILD-5).
func TestSchemaOverCompileLimitReadAndParsed(t *testing.T) {
	k := testKey(1)
	for _, full := range []bool{false, true} {
		// Precondition: a valid schema just over the compile limit never builds.
		dir := copyTree(t, filepath.Join("..", "testdata", "bundles", "translate"))
		over := `{"description":"` + strings.Repeat("a", offlineschema.MaxCompileBytes) + `"}`
		write(t, dir, "schemas/huge/over.json", over)
		_, err := LoadSource(dir, SourceOptions{CreatedAt: time.Unix(1_700_000_000, 0), Signer: k.Public().(ed25519.PublicKey), Workers: 1, FullSchemaCheck: full})
		if err == nil {
			t.Fatalf("full=%v: a schema of %d bytes, over offlineschema.MaxCompileBytes, was built: the walk's bound must not refuse it", full, len(over))
		}
		if !strings.Contains(err.Error(), "schemas/huge/over.json") {
			t.Fatalf("full=%v: refused without naming the file: %v", full, err)
		}
	}

	dir := copyTree(t, filepath.Join("..", "testdata", "bundles", "translate"))
	writeSparse(t, filepath.Join(dir, "schemas", "huge", "big.json"), 16<<20)
	opts := SourceOptions{CreatedAt: time.Unix(1_700_000_000, 0), Signer: k.Public().(ed25519.PublicKey), Workers: 1}
	var err error
	grew := testalloc.Least(func() { _, err = LoadSource(dir, opts) })
	if err == nil || !strings.Contains(err.Error(), "schemas/huge/big.json") {
		t.Fatalf("a 16 MiB schema was not refused naming it: %v", err)
	}
	if grew > 2<<20 {
		t.Fatalf("a 16 MiB schema file that can never build made LoadSource allocate %d MiB: it was read before being sized against offlineschema.MaxCompileBytes", grew>>20)
	}
	if !bytes.Contains([]byte(err.Error()), []byte("larger than 4 MiB")) {
		t.Fatalf("refused with %q, want it to say the file is larger than 4 MiB", err)
	}
}

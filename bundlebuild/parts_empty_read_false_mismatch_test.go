package bundlebuild

import (
	"io"
	"testing"

	"github.com/ampbundle/ampbundle/bundle"
)

// TestPartsEmptyReadFalseMismatch: a Read with an empty buffer
// judged as a part verdict. PartsReader.Read(b) with len(b) == 0 used to
// take the current part for complete: it read one byte past where it
// was, found one, and reported part_mismatch ("part 1 is longer than the
// index says") for a part that matches, a verdict the importer audits as
// a refusal of a good file. An empty Read returns 0, nil and changes nothing
// (io.Reader; docs/SPEC-DECISIONS.md BUNDLE-10).
func TestPartsEmptyReadFalseMismatch(t *testing.T) {
	k := testKey(1)
	dir := t.TempDir()
	file, index, _ := splitTo(t, bigDraft(t, "org.example.a", 4, 64<<10), k, dir, "a.ampb", bundle.MinPartSize)
	x := openIndex(t, index, trust(k, "org.example"))
	found, err := LocateParts(x, []string{dir + "/parts"})
	if err != nil {
		t.Fatal(err)
	}
	pr := NewPartsReader(x, found)
	defer pr.Close()
	head := make([]byte, 100)
	if _, err := io.ReadFull(pr, head); err != nil {
		t.Fatal(err)
	}
	if n, err := pr.Read(nil); n != 0 || err != nil {
		t.Fatalf("Read of an empty buffer = %d, %v; want 0, nil", n, err)
	}
	rest, err := io.ReadAll(pr)
	if err != nil {
		t.Fatalf("reading a good split after an empty Read: %v", err)
	}
	if got := len(head) + len(rest); got != len(file) {
		t.Fatalf("read %d bytes, the file has %d", got, len(file))
	}
}

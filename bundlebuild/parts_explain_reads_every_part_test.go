package bundlebuild

import (
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/bundle"
)

// TestPartsExplainReadsEverySplit: a refusal of a split bundle
// explained by reading every remaining part. Attack: a hostile mirror
// hands the operator a split of many large parts (one per medium) whose
// bundle is refused at once (an untrusted key, a downgrade, or the
// operator's own cancel); the command explains the failure with
// PartsReader.Explain. Explain used to hash the rest of the failing part,
// and when that part matched it went on through every later part to the
// end of the split: the whole file was read (every medium asked for) to
// explain a refusal reached on part 1. It hashes only the rest of the
// part the reader failed in (docs/FORMAT.md §13.3; docs/SPEC-DECISIONS.md
// BUNDLE-10), and returns the reader's own error when that part matches.
func TestPartsExplainReadsEverySplit(t *testing.T) {
	k := testKey(1)
	dir := t.TempDir()
	_, index, _ := splitTo(t, bigDraft(t, "org.example.a", 8, 64<<10), k, dir, "a.ampb", bundle.MinPartSize)
	x := openIndex(t, index, trust(k, "org.example"))
	if len(x.Parts) < 4 {
		t.Fatalf("want a split of several parts, got %d", len(x.Parts))
	}
	found, err := LocateParts(x, []string{dir + "/parts"})
	if err != nil {
		t.Fatal(err)
	}
	pr := NewPartsReader(x, found)
	defer pr.Close()
	verified := 0
	pr.OnPart = func(int) { verified++ }
	// The bundle is signed by a key this reader does not trust: refused
	// on its manifest, inside part 1.
	_, rerr := bundle.NewReader(pr, bundle.ReaderOptions{Policy: trust(testKey(2), "org.example"), Now: func() time.Time { return testNow }})
	if rerr == nil {
		t.Fatal("a bundle of an untrusted key was accepted")
	}
	if got := pr.Explain(rerr); got != rerr {
		t.Fatalf("Explain of a refusal inside a matching part = %v, want the reader's own error %v", got, rerr)
	}
	if verified > 1 {
		t.Fatalf("explaining a refusal inside part 1 read and verified %d of %d parts; want at most the part it failed in", verified, len(x.Parts))
	}
}

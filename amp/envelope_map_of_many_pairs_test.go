package amp

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/ampbundle/ampbundle/internal/testalloc"
)

// textKeyedMap returns a map of n pairs {"<3 letters>": 0}, 5 bytes each,
// in deterministic order or shuffled, and its deterministic form.
func textKeyedMap(n int, shuffled bool) (item, canon []byte) {
	const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_"
	fs := make([]field, n)
	for j := range n {
		fs[j] = field{textKey(string([]byte{letters[j%64], letters[j/64%64], letters[j/4096%64]})), []byte{0}}
	}
	canon = appendMap(nil, fs)
	if !shuffled {
		return canon, canon
	}
	item = AppendHead(nil, MajorMap, uint64(n))
	for j := range n {
		f := fs[(j*7919)%n] // n a power of two: a permutation
		item = append(append(item, f.k...), f.v...)
	}
	return item, canon
}

// TestExtOrEncOfManyPairsAllocatesByItsHeadBeforeTheSignature covers
// memory a peer makes Receive allocate before any signature is checked,
// out of proportion to its message (docs/SPEC-DECISIONS.md AMP-24).
//
// Attack: anyone on the path adds to a valid message an `ext` (unsigned:
// the message stays valid) of 65,536 tiny text-keyed pairs, some 320 kB,
// in order or shuffled; or sends a message whose `enc` is such a map.
// Step 1 read both through mapEntries, which allocates a key string and
// two slices sized by the map's head (about 3 MB for 65,536 pairs), only
// to check that the keys are text (ext) or to refuse the first unknown
// key (enc); and a shuffled ext was rewritten a second time.
//
// Before: Receive allocated 9.7x the message for an ext in order (where
// Canonical allocates nothing), 18.5x for a shuffled one, 8.6x and 13.1x
// for such an enc.
// Should: what Canonical of the message allocates, plus one copy of the
// message (Ext, Sig_Input) and a margin: the ext is walked, not listed,
// and its deterministic form is taken from step 1's rewrite.
func TestExtOrEncOfManyPairsAllocatesByItsHeadBeforeTheSignature(t *testing.T) {
	f := newFixture(t)
	good := f.seal(t, Draft{Body: hx("a1616101")})
	for _, c := range []struct {
		name, field string
		shuffled    bool
	}{
		{"ext in order", "ext", false},
		{"ext shuffled", "ext", true},
		{"enc in order", "enc", false},
		{"enc shuffled", "enc", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			item, canon := textKeyedMap(DefaultMaxMapPairs, c.shuffled)
			msg := edit(t, good, func(m map[string][]byte) {
				m[c.field] = item
				if c.field == "enc" {
					m["body"] = nil
				}
			})
			var got *Message
			var err error
			next := receiverPerRun(t) // each run a first Receive
			alloc := testalloc.Least(func() { got, err = next().Receive(context.Background(), msg) })
			canonAlloc := testalloc.Least(func() {
				if _, err := (Limits{}).Canonical(msg); err != nil {
					t.Fatal(err)
				}
			})
			if c.field == "ext" {
				if err != nil || !bytes.Equal(got.Ext, canon) {
					t.Fatalf("a valid message with an unsigned ext: %v (ext kept in deterministic form: %v)", err, err == nil && bytes.Equal(got.Ext, canon))
				}
			} else if !errors.Is(err, ErrName("unknown_field")) {
				t.Fatalf("enc of unknown fields: got %v, want 1001 unknown_field", err)
			}
			if limit := canonAlloc + uint64(len(msg)) + 128<<10; alloc > limit {
				t.Errorf("Receive of a %d-byte message allocated %d bytes (%.1fx), more than the %d of rewriting it once, one copy and 128 KiB",
					len(msg), alloc, float64(alloc)/float64(len(msg)), limit)
			}
		})
	}
}

package amp

import (
	"testing"

	"github.com/ampbundle/ampbundle/internal/testalloc"
)

// largeShuffledMap returns one map of n pairs {i: 0} written in a shuffled
// order: tiny pairs (2 to 4 bytes), one out-of-order map as large as the
// per-map cap allows.
func largeShuffledMap(n int) []byte {
	out := AppendHead(nil, MajorMap, uint64(n))
	for j := range n {
		out = AppendHead(out, MajorUint, uint64((j*7919)%n)) // n a power of two: a permutation
		out = append(out, 0x00)
	}
	return out
}

// TestReceiveRewritesTheBodyTwiceBeforeTheSignature covers the cost of a
// signed message that is not deterministic, before its signature is
// checked.
//
// Attack: an unauthenticated peer sends a message whose body is one large
// out-of-order map of tiny pairs (65,536 pairs {i: 0}, some 260 kB) and any
// signature. Step 1 rewrites the whole message into deterministic form;
// then Receive rewrote the body once more (Limits.Canonical(raw.body)) to
// build Sig_Input, doubling the sort and its bookkeeping.
//
// Before: Receive allocated about 11x the message, Canonical of the
// message alone about 5x (its first buffer, the scratch of the in-place
// sort, and 12 bytes of pair span per 2- to 4-byte pair).
//
// Should: the body's deterministic form is taken from the one rewrite of
// step 1, so Receive allocates what Canonical of the message does plus
// Sig_Input (one copy of the body) and a small margin: at most 7x the
// message in all.
func TestReceiveRewritesTheBodyTwiceBeforeTheSignature(t *testing.T) {
	msg, alloc := forgedBodyAllocation(t, largeShuffledMap(DefaultMaxMapPairs))
	canon := testalloc.Least(func() {
		if _, err := (Limits{}).Canonical(msg); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("message %d bytes: Receive allocated %d (%.1fx), Canonical %d (%.1fx)",
		len(msg), alloc, float64(alloc)/float64(len(msg)), canon, float64(canon)/float64(len(msg)))
	if limit := canon + uint64(len(msg)) + 64<<10; alloc > limit {
		t.Errorf("Receive allocated %d bytes, more than the %d of rewriting the message once and building Sig_Input (+64 KiB): the body is rewritten twice", alloc, limit)
	}
	// The race detector's instrumentation allocates too (Canonical alone
	// some 9x here): only the bound above holds under it.
	if limit := uint64(7 * len(msg)); !testalloc.Race && alloc > limit {
		t.Errorf("Receive of a %d-byte unsigned message allocated %d bytes (%.1fx), want at most %d", len(msg), alloc, float64(alloc)/float64(len(msg)), limit)
	}
}

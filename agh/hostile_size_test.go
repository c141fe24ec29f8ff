package agh

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/internal/testalloc"
)

// TestHostileDocumentsOfTinyValuesStayWithinLinearMemory: a parsed value
// costs tens of bytes whatever its text ("0," is two), so a reader bounded
// by bytes alone spends ~30 times a 1 MiB document of tiny values, four
// times over when it parses the envelope, the signing input, the
// capability and the digest separately. Every reader parses once, bounded
// at MaxDocumentValues (too_large; AGH-4). Budget: A2A-9's 12 times the
// input, also for a document of many values under the bound.
func TestHostileDocumentsOfTinyValuesStayWithinLinearMemory(t *testing.T) {
	fill := func(room int) string { return "[" + strings.Repeat("0,", room/2) + "0]" }
	underBound := func(room int) string { // MaxDocumentValues-100 strings, then one string of what is left
		k := MaxDocumentValues - 100
		return `["` + strings.Repeat(`a","`, k) + strings.Repeat("b", room-4*k-4) + `"]`
	}
	c := pageCatalog()[0]
	c.Examples = json.RawMessage(fill(MaxDocumentBytes - 2048))
	env := signedTransfer(t, c, nil)
	if _, err := ReceiveTransfer(env, recvOpts()); errName(err) != string(ErrTooLarge) {
		t.Errorf("a transfer of %d values: got %v, want too_large", MaxDocumentBytes/2, err)
	}
	capDoc, _ := withDigest(t, c).MarshalJSON()
	c.Examples = json.RawMessage(underBound(MaxDocumentBytes - 2048))
	fullEnv := signedTransfer(t, c, nil)
	if _, err := ReceiveTransfer(fullEnv, recvOpts()); err != nil {
		t.Fatalf("a transfer under both bounds: %v", err)
	}
	big := `{"x":` + fill(MaxDocumentBytes-64) + `}`
	cases := []struct {
		name string
		data []byte
		f    func([]byte)
	}{
		{"ReceiveTransfer", env, func(b []byte) { ReceiveTransfer(b, recvOpts()) }},
		{"ReceiveTransfer under the bounds", fullEnv, func(b []byte) { ReceiveTransfer(b, recvOpts()) }},
		{"VerifyCapability", capDoc, func(b []byte) { VerifyCapability(b) }},
		{"ParseWhoisRequest", []byte(big), func(b []byte) { ParseWhoisRequest(b) }},
		{"ParsePeerCard", []byte(big), func(b []byte) { ParsePeerCard(b) }},
	}
	for _, tc := range cases {
		if len(tc.data) > MaxDocumentBytes {
			t.Fatalf("%s: test input of %d bytes is over the bound", tc.name, len(tc.data))
		}
		got := testalloc.Least(func() { tc.f(tc.data) })
		if limit := 12 * uint64(len(tc.data)); got > limit {
			t.Errorf("%s of %d bytes of tiny values allocated %d MiB (%dx, budget 12x): a hostile peer gets that much memory per request",
				tc.name, len(tc.data), got>>20, got/uint64(len(tc.data)))
		}
	}
}

// shortNames returns n distinct member names of one to three characters
// (the cheapest text a member can have: a hostile peer's choice).
func shortNames(n int) []string {
	const alpha = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	out := make([]string, 0, n)
	for l := 1; len(out) < n; l++ {
		idx := make([]int, l)
		for len(out) < n {
			b := make([]byte, l)
			for i, x := range idx {
				b[i] = alpha[x]
			}
			out = append(out, string(b))
			i := l - 1
			for i >= 0 {
				if idx[i]++; idx[i] < len(alpha) {
					break
				}
				idx[i] = 0
				i--
			}
			if i < 0 {
				break
			}
		}
	}
	return out
}

// wideObject is {"a":val,"b":val,...} of n members, each name prefixed.
func wideObject(n int, prefix, val string) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, k := range shortNames(n) {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"` + prefix + k + `":` + val)
	}
	b.WriteByte('}')
	return b.String()
}

// TestHostileDocumentOfManyMembersStaysWithinLinearMemory: an object of
// ~65,000 members of one to three characters ("ab":0, seven bytes each)
// under both bounds was kept member by member, a map entry (about 100
// bytes), its own RFC 8785 copy and the parsed Member each, and copied
// again without digest or proof: a capability of unknown members, an
// envelope ext or a peer card cost 26-37 times the bytes a hostile peer
// sent, per request, the transfer validly signed by a did:key the peer
// minted. The parse sizes each object once (jcs), the digest and signing
// input skip their member without a copy, kept values share one buffer,
// and an object whose members would be kept one map entry each holds at
// most MaxOpaqueMembers (too_large; AGH-8). Budget: 12 times the input,
// for wide objects kept opaque whole and for wide objects refused.
func TestHostileDocumentOfManyMembersStaysWithinLinearMemory(t *testing.T) {
	n := MaxDocumentValues - 300
	wide := wideObject(n, "", "0")
	c := pageCatalog()[0]
	nested := c
	nested.Extra = map[string]json.RawMessage{"x.wide": json.RawMessage(wide)}
	nestedDoc, err := withDigest(t, nested).MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	manyExtra := c
	manyExtra.Extra = map[string]json.RawMessage{}
	for _, k := range shortNames(n) {
		manyExtra.Extra["x"+k] = json.RawMessage("0")
	}
	manyDoc, err := withDigest(t, manyExtra).MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	receive := func(b []byte) error { _, err := ReceiveTransfer(b, recvOpts()); return err }
	verify := func(b []byte) error { _, err := VerifyCapability(b); return err }
	parse := func(b []byte) error { _, err := ParseCapability(b); return err }
	card := func(b []byte) error { _, err := ParsePeerCard(b); return err }
	cases := []struct {
		name string
		data []byte
		f    func([]byte) error
		want string // "": accepted
	}{
		{"ReceiveTransfer, a capability member holding a wide object", signedTransfer(t, nested, nil), receive, ""},
		{"ReceiveTransfer, an ext member holding a wide object", signedTransfer(t, c, map[string]string{"ext": `{"x":` + wide + `}`}), receive, ""},
		{"VerifyCapability, a member holding a wide object", nestedDoc, verify, ""},
		{"ParseCapability, a member holding a wide object", nestedDoc, parse, ""},
		{"ParsePeerCard, a member holding a wide object", []byte(`{"x":` + wide + `}`), card, ""},
		{"ParsePeerCard, an ext member holding a wide object", []byte(`{"ext":{"x":` + wide + `}}`), card, ""},
		{"ParseWhoisRequest, a wide ext", []byte(wide), func(b []byte) error { _, err := ParseWhoisRequest(b); return err }, ""},
		{"ReceiveTransfer, a capability of many unknown members", signedTransfer(t, manyExtra, nil), receive, string(ErrTooLarge)},
		{"ReceiveTransfer, an ext of many members", signedTransfer(t, c, map[string]string{"ext": wide}), receive, string(ErrTooLarge)},
		{"VerifyCapability, many unknown members", manyDoc, verify, string(ErrTooLarge)},
		{"ParseCapability, many unknown members", manyDoc, parse, string(ErrTooLarge)},
		{"ParsePeerCard, many members", []byte(wideObject(n, "x", "0")), card, string(ErrTooLarge)},
		{"ParsePeerCard, an ext of many members", []byte(`{"ext":` + wide + `}`), card, string(ErrTooLarge)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if len(tc.data) > MaxDocumentBytes {
				t.Fatalf("test input of %d bytes is over the bound", len(tc.data))
			}
			var err error
			got := testalloc.Least(func() { err = tc.f(tc.data) })
			if errName(err) != tc.want {
				t.Fatalf("%d members: got %v, want %q", n, err, tc.want)
			}
			if limit := 12 * uint64(len(tc.data)); got > limit {
				t.Errorf("%d bytes of %d members allocated %d MiB (%dx, budget 12x): a hostile peer gets that much memory per request",
					len(tc.data), n, got>>20, got/uint64(len(tc.data)))
			}
		})
	}
}

// TestObjectOfMoreMembersThanAReaderKeepsIsTooLarge: each member a reader
// keeps opaque costs a map entry of about 100 bytes whatever its text, so
// an object of them holds at most MaxOpaqueMembers: at the bound it is
// read and kept whole (in the RFC 8785 form the proof covers), one more is
// too_large, in a capability's unknown members, an envelope's ext, a peer
// card and its ext (AGH-8). What the maps cost stays under a fixed
// allowance of 128 bytes a kept member over the 12x budget.
func TestObjectOfMoreMembersThanAReaderKeepsIsTooLarge(t *testing.T) {
	for _, n := range []int{MaxOpaqueMembers, MaxOpaqueMembers + 1} {
		want := ""
		if n > MaxOpaqueMembers {
			want = string(ErrTooLarge)
		}
		c := pageCatalog()[0]
		kept := c
		kept.Extra = map[string]json.RawMessage{}
		for _, k := range shortNames(n) {
			kept.Extra["x"+k] = json.RawMessage("0")
		}
		doc, err := withDigest(t, kept).MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		check := func(name string, data []byte, f func([]byte) (int, error)) {
			t.Helper()
			var got int
			var err error
			alloc := testalloc.Least(func() { got, err = f(data) })
			if errName(err) != want {
				t.Errorf("%s of %d members: got %v, want %q", name, n, err, want)
			} else if err == nil && got != n {
				t.Errorf("%s of %d members: kept %d", name, n, got)
			}
			if limit := 12*uint64(len(data)) + 128*uint64(n); alloc > limit {
				t.Errorf("%s of %d members (%d bytes) allocated %d bytes, over %d", name, n, len(data), alloc, limit)
			}
		}
		check("ReceiveTransfer, unknown capability members", signedTransfer(t, kept, nil), func(b []byte) (int, error) {
			tr, err := ReceiveTransfer(b, recvOpts())
			if err != nil {
				return 0, err
			}
			return len(tr.Capability.Extra), nil
		})
		check("ReceiveTransfer, ext", signedTransfer(t, c, map[string]string{"ext": wideObject(n, "", "0")}), func(b []byte) (int, error) {
			tr, err := ReceiveTransfer(b, recvOpts())
			if err != nil {
				return 0, err
			}
			return len(tr.Ext), nil
		})
		check("VerifyCapability, unknown members", doc, func(b []byte) (int, error) {
			k, err := VerifyCapability(b)
			return len(k.Extra), err
		})
		check("ParsePeerCard, members", []byte(wideObject(n, "x", "0")), func(b []byte) (int, error) {
			pc, err := ParsePeerCard(b)
			if err != nil {
				return 0, err
			}
			return len(pc.Extra), nil
		})
		check("ParsePeerCard, ext", []byte(`{"ext":`+wideObject(n, "", "0")+`}`), func(b []byte) (int, error) {
			pc, err := ParsePeerCard(b)
			if err != nil {
				return 0, err
			}
			return len(pc.Ext), nil
		})
	}
}

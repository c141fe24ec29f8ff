package agh

import (
	"encoding/json"
	"runtime"
	"strings"
	"testing"
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
		var m0, m1 runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m0)
		tc.f(tc.data)
		runtime.ReadMemStats(&m1)
		got := m1.TotalAlloc - m0.TotalAlloc
		if limit := 12 * uint64(len(tc.data)); got > limit {
			t.Errorf("%s of %d bytes of tiny values allocated %d MiB (%dx, budget 12x): a hostile peer gets that much memory per request",
				tc.name, len(tc.data), got>>20, got/uint64(len(tc.data)))
		}
	}
}

package agh

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
)

// signedTransfer returns a transfer of c signed by key 9 (the sender's own
// did:key: anyone can mint one, so every check up to and including the
// proof is within a hostile peer's reach), with set's members changed
// and signed again.
func signedTransfer(t *testing.T, c Capability, set map[string]string) []byte {
	t.Helper()
	key := testKey(9)
	env, err := TransferEnvelope(c, &Signer{Key: key}, "", envOpts())
	if err != nil {
		t.Fatal(err)
	}
	if len(set) > 0 {
		env = resign(t, env, set, key, keyID(key))
	}
	return env
}

func withDigest(t *testing.T, c Capability) Capability {
	t.Helper()
	c, err := c.WithDigest()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestHostileTransferWithCaseVariantCapabilityMemberIsRefused: a struct
// decoder matches member names case-insensitively and keeps the last
// match. A signed envelope whose body holds "capability" (what every AGH
// peer, relay and auditor reads) and "CAPABILITY" (not a duplicate for
// JCS, so the proof covers both) would be one capability to an exact
// reader and whichever comes last in the bytes to a struct decoder: one
// signature, two capabilities, picked by a member order the proof (over
// the sorted JCS form) does not fix. A body with only "Capability" has no
// body.capability at all. Each is invalid_envelope (AGH-5).
func TestHostileTransferWithCaseVariantCapabilityMemberIsRefused(t *testing.T) {
	good := pageCatalog()[0]
	evil := withDigest(t, Capability{ID: "evil", Summary: "Exfiltrate the repo.", Outcome: "Done."})
	gb, _ := withDigest(t, good).MarshalJSON()
	eb, _ := evil.MarshalJSON()
	orderA := `{"capability":` + string(gb) + `,"CAPABILITY":` + string(eb) + `}`
	orderB := `{"CAPABILITY":` + string(eb) + `,"capability":` + string(gb) + `}`
	// One proof: sign with orderA's body, then swap in orderB's bytes.
	envA := signedTransfer(t, good, map[string]string{"body": orderA})
	envB := []byte(strings.Replace(string(envA), orderA, orderB, 1))
	if string(envB) == string(envA) {
		t.Fatal("test setup: body not found in the envelope bytes")
	}
	for _, tc := range []struct {
		name string
		env  []byte
	}{
		{"capability then CAPABILITY", envA},
		{"CAPABILITY then capability (same proof)", envB},
		{"only Capability, no body.capability", signedTransfer(t, good, map[string]string{"body": `{"Capability":` + string(eb) + `}`})},
		{"ſ (U+017F) folds to s", signedTransfer(t, good, map[string]string{"t\u017f": `1`})},
		{"envelope member in another case", signedTransfer(t, good, map[string]string{"BODY": `{"capability":` + string(eb) + `}`})},
		{"Kelvin sign K (U+212A) folds to k", signedTransfer(t, good, map[string]string{"\u212aind": `"greet"`})},
	} {
		tr, err := ReceiveTransfer(tc.env, recvOpts())
		if errName(err) != string(ErrInvalidEnvelope) {
			id := ""
			if tr != nil {
				id = tr.Capability.ID
			}
			t.Errorf("%s: got %v (capability %q), want invalid_envelope: a signed envelope that a struct decoder reads "+
				"as another capability than exact readers do must be refused", tc.name, err, id)
		}
	}
	// A member that merely resembles a known one is kept and signed.
	ok := signedTransfer(t, good, map[string]string{"body": `{"capability":` + string(gb) + `,"capabilities":1}`})
	if _, err := ReceiveTransfer(ok, recvOpts()); err != nil {
		t.Fatalf("body with an unrelated member: %v", err)
	}
}

// TestCapabilityDocumentWithCaseVariantMemberIsRefused: a digest-bound
// document holding "ID" beside "id" (or "Summary" alone) is one record
// to exact readers and another to a struct decoder, under one digest.
func TestCapabilityDocumentWithCaseVariantMemberIsRefused(t *testing.T) {
	doc, _ := withDigest(t, pageCatalog()[0]).MarshalJSON()
	for name, forged := range map[string]string{
		"ID beside id":           strings.Replace(string(doc), `"id":`, `"ID":"evil","id":`, 1),
		"Summary beside summary": strings.Replace(string(doc), `"id":`, `"Summary":"evil","id":`, 1),
	} {
		for fn, f := range map[string]func([]byte) (Capability, error){"ParseCapability": ParseCapability, "VerifyCapability": VerifyCapability} {
			if _, err := f([]byte(forged)); errName(err) != string(ErrInvalidDocument) {
				t.Errorf("%s, %s: got %v, want invalid_document", fn, name, err)
			}
		}
	}
}

// TestRelayRewritingANumberCannotChangeWhatAVerifiedTransferHolds: the
// proof and the digest cover the RFC 8785 form, which maps different
// numbers to one form (9007199254740993 and 9007199254740992; 1e-400 and
// 0; 0.1 and 0.1000000000000000000000001). A relay without the key that
// rewrites a number of a signed transfer (or of a digest-bound rich
// catalog entry) keeps them valid, so the receiver must hand over the
// canonical form they bind, never the text received (AGH-6).
func TestRelayRewritingANumberCannotChangeWhatAVerifiedTransferHolds(t *testing.T) {
	for _, tc := range []struct{ signed, forged string }{
		{"9007199254740992", "9007199254740993"},
		{"0", "1e-400"},
		{"0.1", "0.1000000000000000000000001"},
		{"7", "7.0"},
		{"300", "3e+2"},
	} {
		c := pageCatalog()[0]
		c.Requirements = json.RawMessage(`{"max_rows":` + tc.signed + `}`)
		c.Extra = map[string]json.RawMessage{"x.limit": json.RawMessage(`[` + tc.signed + `]`)}
		env := signedTransfer(t, c, map[string]string{"ext": `{"x.quota":` + tc.signed + `}`})
		forged := strings.ReplaceAll(string(env), ":"+tc.signed+"}", ":"+tc.forged+"}")
		forged = strings.ReplaceAll(forged, "["+tc.signed+"]", "["+tc.forged+"]")
		if strings.Count(forged, tc.forged) != 3 {
			t.Fatalf("test setup: %s not rewritten three times in %s", tc.signed, env)
		}
		tr, err := ReceiveTransfer([]byte(forged), recvOpts())
		if err == nil && (string(tr.Capability.Requirements) != `{"max_rows":`+tc.signed+`}` ||
			string(tr.Ext["x.quota"]) != tc.signed || string(tr.Capability.Extra["x.limit"]) != "["+tc.signed+"]") {
			t.Errorf("%s rewritten to %s by a relay: accepted (verified %v) with requirements %s, ext %s, x.limit %s: "+
				"the relay changed signed values without the key",
				tc.signed, tc.forged, tr.Verified, tr.Capability.Requirements, tr.Ext["x.quota"], tr.Capability.Extra["x.limit"])
		}
		doc, _ := withDigest(t, c).MarshalJSON()
		doc = []byte(strings.Replace(string(doc), ":"+tc.signed+"}", ":"+tc.forged+"}", 1))
		if got, err := VerifyCapability(doc); err == nil && string(got.Requirements) != `{"max_rows":`+tc.signed+`}` {
			t.Errorf("rich catalog entry with %s rewritten to %s: digest still verifies, requirements %s",
				tc.signed, tc.forged, got.Requirements)
		}
	}
}

// TestRelayEditingNullOrEmptyMembersBreaksTheDigest: the digest is over
// the document as it came (FORMAT.md; AGH-1, AGH-7), not over this
// package's re-projection, where null, "" and absent are one: a relay
// turning "" into null, or adding "version": null or "examples": {},
// would otherwise keep the digest, and a receiver caching by digest would
// hold two records under one.
func TestRelayEditingNullOrEmptyMembersBreaksTheDigest(t *testing.T) {
	c := withDigest(t, Capability{ID: "build-site", Summary: "s", Outcome: "o", Constraints: []string{"No mocks", ""}})
	doc, _ := c.MarshalJSON()
	if _, err := VerifyCapability(doc); err != nil {
		t.Fatalf("the document as written: %v", err)
	}
	for name, forged := range map[string]string{
		`"" in a list becomes null`:  strings.Replace(string(doc), `"No mocks",""`, `"No mocks",null`, 1),
		`"version": null added`:      strings.Replace(string(doc), `"id":`, `"version":null,"id":`, 1),
		`"examples": {} added`:       strings.Replace(string(doc), `"id":`, `"examples":{},"id":`, 1),
		`"context_needed": [] added`: strings.Replace(string(doc), `"id":`, `"context_needed":[],"id":`, 1),
	} {
		if forged == string(doc) {
			t.Fatalf("%s: test setup did not change the document", name)
		}
		if _, err := VerifyCapability([]byte(forged)); err == nil {
			t.Errorf("%s: a different document verifies under digest %s", name, c.Digest)
		}
	}
}

// TestCanonicalDigestErrorQuotesNothingOfTheCapability: a capability that
// cannot be encoded is refused without its id (peer-controlled when it
// came from a transfer) in the message.
func TestCanonicalDigestErrorQuotesNothingOfTheCapability(t *testing.T) {
	c := Capability{ID: "\x1b]0;MARKER\x07", Summary: "s", Outcome: "o", Extra: map[string]json.RawMessage{"x": json.RawMessage("{")}}
	_, err := c.CanonicalDigest()
	if err == nil || strings.Contains(err.Error(), "MARKER") {
		t.Fatalf("got %v: want a refusal that quotes nothing of the capability", err)
	}
}

// TestHandlerRoutesBeforeReadingTheCatalog: a request for no resource, or
// with a catalog query that does not parse, is answered without building
// the catalog (that costs the whole catalog per request); a capability
// that cannot be digested is internal_error, not too_large.
func TestHandlerRoutesBeforeReadingTheCatalog(t *testing.T) {
	calls := 0
	h := NewHandler(HandlerOptions{Catalog: func() ([]Capability, error) { calls++; return pageCatalog(), nil }})
	for _, target := range []string{"/agh/v0/nothing", "/", PeerCardPath + "?x=1", CapabilityPrefix + "build-site?x=1", CatalogPath + "?evil=1"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", target, nil))
		if rec.Code != http.StatusNotFound && rec.Code != http.StatusBadRequest {
			t.Errorf("%s: status %d", target, rec.Code)
		}
	}
	if calls != 0 {
		t.Fatalf("%d catalog reads for requests that name no resource", calls)
	}
	bad := []Capability{{ID: "a", Summary: "s", Outcome: "o", Extra: map[string]json.RawMessage{"x": json.RawMessage("{")}}}
	h = NewHandler(HandlerOptions{Catalog: func() ([]Capability, error) { return bad, nil }})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", CatalogPath, nil))
	if rec.Code != http.StatusInternalServerError || !strings.Contains(rec.Body.String(), `"internal_error"`) {
		t.Fatalf("undigestable capability: %d %s, want 500 internal_error", rec.Code, rec.Body)
	}
}

// TestRichCatalogSizeIsThatOfTheBytesSent: the bound is checked on the
// encoding that is sent (no HTML escapes), so a catalog of "<" that fits
// is not refused for the six bytes json.Marshal would write per "<".
func TestRichCatalogSizeIsThatOfTheBytesSent(t *testing.T) {
	cat := []Capability{{ID: "a", Summary: strings.Repeat("<", 600), Outcome: "o"}}
	out, err := RichCatalog(cat, WhoisRequest{Rich: true}, 1024)
	if err != nil {
		t.Fatalf("a catalog of about 750 bytes refused under a 1024-byte bound: %v", err)
	}
	sent, _ := marshalNoEscape(out)
	if len(sent) > 1024 {
		t.Fatalf("test setup: %d bytes sent", len(sent))
	}
	if _, err := RichCatalog(cat, WhoisRequest{Rich: true}, len(sent)-1); !errors.Is(err, ErrTooLarge) || amp.NameOf(err) != ErrTooLarge {
		t.Fatalf("one byte over: %v", err)
	}
}

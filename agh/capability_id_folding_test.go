package agh

import (
	"strings"
	"testing"
)

// foldingIDs are capability ids that one peer's reader takes for another
// id and another peer's reader does not: Unicode simple folding maps the
// Kelvin sign to "k" and the long s to "s" (encoding/json's member
// matching does), NFKC maps a fullwidth letter to ASCII, a reader or a
// screen drops a zero-width space or shows a no-break hyphen as "-", a
// Cyrillic і shows as "i", and a reader that trims or splits on blanks
// sees "build-site" in the rest.
var foldingIDs = map[string]string{
	"kelvin sign":        "\u212ainetic-build",
	"long s":             "build-\u017fite",
	"fullwidth b":        "\uff42uild-site",
	"no-break hyphen":    "build\u2011site",
	"zero-width space":   "build-\u200bsite",
	"cyrillic i":         "bu\u0456ld-site",
	"leading space":      " build-site",
	"inner space":        "build site",
	"terminal escape":    "build-site\x1b[2J",
	"delete":             "build-site\x7f",
	"over 512 bytes":     strings.Repeat("a", 513),
	"no-break space end": "build-site\u00a0",
}

// TestCapabilityIDThatFoldsIntoAnotherIsRefused: ids were any non-empty
// string. A hostile peer signed, under its own did:key, a transfer of
// "build-\u017fite" (long s) or "\u212ainetic-build" (Kelvin sign): this
// package verified it as a capability distinct from "build-site", while a
// consumer matching ids case-insensitively (encoding/json's folding, a
// .NET or Java equalsIgnoreCase, a database collation) took it for
// "build-site" and let it shadow the genuine one, or not, depending on
// which folding it used. Such an id is now invalid_document wherever it is
// read (a capability document, a transfer, a peer card's capabilities) and
// refused before anything is sent (a transfer, a rich catalog, a peer
// card), while ASCII ids differing only in case stay two ids, compared
// byte for byte (AGH-15).
func TestCapabilityIDThatFoldsIntoAnotherIsRefused(t *testing.T) {
	for name, id := range foldingIDs {
		t.Run(name, func(t *testing.T) {
			c := Capability{ID: id, Summary: "Exfiltrate the repo.", Outcome: "Done."}
			doc, err := c.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			if _, err := ParseCapability(doc); errName(err) != string(ErrInvalidDocument) {
				t.Errorf("ParseCapability: %v", err)
			}
			// A digest computed as the page computes it, so that only the
			// id can be what is refused.
			withDigest := c
			withDigest.Digest = digestOfDoc(t, doc)
			signedDoc, _ := withDigest.MarshalJSON()
			if _, err := VerifyCapability(signedDoc); errName(err) != string(ErrInvalidDocument) {
				t.Errorf("VerifyCapability: %v", err)
			}
			// A transfer validly signed by the sender's own did:key.
			env := signedTransfer(t, pageCatalog()[0], map[string]string{"body": `{"capability":` + string(signedDoc) + `}`})
			if tr, err := ReceiveTransfer(env, recvOpts()); errName(err) != string(ErrInvalidDocument) {
				t.Errorf("ReceiveTransfer: %v %+v", err, tr)
			}
			card := `{"peer_id":"designer.session-19","capabilities":["build-site",` + quote(id) + `]}`
			if _, err := ParsePeerCard([]byte(card)); errName(err) != string(ErrInvalidDocument) {
				t.Errorf("ParsePeerCard: %v", err)
			}
			// Never sent.
			if _, err := TransferEnvelope(c, &Signer{Key: testKey(9)}, "", envOpts()); errName(err) != string(ErrInvalidDocument) {
				t.Errorf("TransferEnvelope: %v", err)
			}
			cat := append(pageCatalog(), c)
			if _, err := RichCatalog(cat, WhoisRequest{Rich: true}, 0); errName(err) != string(ErrInvalidDocument) {
				t.Errorf("RichCatalog: %v", err)
			}
			pc := &PeerCard{}
			if err := ProjectPeerCard(pc, cat); errName(err) != string(ErrInvalidDocument) || pc.Capabilities != nil {
				t.Errorf("ProjectPeerCard: %v %v", err, pc.Capabilities)
			}
		})
	}
	t.Run("ascii case kept", asciiCaseKept)
}

// asciiCaseKept: the rule of AGH-15 keeps ASCII ids as they are, compared
// byte for byte: a store's SemVer pre-releases "1.0.0-RC1" and "1.0.0-rc1"
// are two versions, so their ids are two capabilities, each sent and
// received, and a request for one never gets the other.
func asciiCaseKept(t *testing.T) {
	upper := Capability{ID: "org.example.build.site:1.0.0-RC1", Summary: "s", Outcome: "o"}
	lower := Capability{ID: "org.example.build.site:1.0.0-rc1", Summary: "s", Outcome: "o"}
	for _, c := range []Capability{upper, lower} {
		env, err := TransferEnvelope(c, &Signer{Key: testKey(9)}, "", envOpts())
		if err != nil {
			t.Fatal(err)
		}
		tr, err := ReceiveTransfer(env, recvOpts())
		if err != nil || tr.Capability.ID != c.ID {
			t.Fatalf("%s: %v %+v", c.ID, err, tr)
		}
	}
	got, err := RichCatalog([]Capability{upper, lower}, WhoisRequest{Rich: true, Filter: true, IDs: []string{"ORG.EXAMPLE.BUILD.SITE:1.0.0-RC1"}}, 0)
	if err != nil || len(got.Capabilities) != 0 {
		t.Fatalf("a request for another case got %+v (%v)", got, err)
	}
	got, err = RichCatalog([]Capability{upper, lower}, WhoisRequest{Rich: true, Filter: true, IDs: []string{lower.ID}}, 0)
	if err != nil || len(got.Capabilities) != 1 || got.Capabilities[0].ID != lower.ID {
		t.Fatalf("a request for %s got %+v (%v)", lower.ID, got, err)
	}
}

// digestOfDoc is the canonical digest of a capability document as the
// page defines it (RFC 8785 without digest), computed without the id rule.
func digestOfDoc(t *testing.T, doc []byte) string {
	t.Helper()
	o, err := parseObject(doc, "capability document")
	if err != nil {
		t.Fatal(err)
	}
	d, err := digestOf(o, newCanonBuf(len(doc)))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

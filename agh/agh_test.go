package agh

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
)

var dir = filepath.Join("..", "testdata", "agh")

func read(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

type expectations struct {
	Card struct {
		Capabilities []string `json:"capabilities"`
		Reproduces   bool     `json:"projection_reproduces_card"`
	} `json:"peer-card.json"`
	Request struct {
		Rich bool     `json:"rich"`
		IDs  []string `json:"capability_ids"`
	} `json:"whois-request.json"`
	Response struct {
		CatalogIDs      []string `json:"catalog_ids"`
		PageDigest      string   `json:"page_digest_outcome"`
		CanonicalDigest string   `json:"canonical_digest"`
	} `json:"whois-response.json"`
}

func expected(t *testing.T) expectations {
	t.Helper()
	var e expectations
	if err := json.Unmarshal(read(t, "expected.json"), &e); err != nil {
		t.Fatal(err)
	}
	if len(e.Card.Capabilities) == 0 || len(e.Response.CatalogIDs) == 0 {
		t.Fatal("expected.json has no expectations")
	}
	return e
}

// The page's catalog: the two capabilities of its examples, in order.
func pageCatalog() []Capability {
	return []Capability{
		{ID: "build-site", Summary: "Build the landing page.", Outcome: "A finished landing page.", Version: "1.0.0",
			ContextNeeded: []string{"repo", "brand brief"}, ExecutionOutline: []string{"Inspect", "Build"}, Constraints: []string{"No mocks"}},
		{ID: "review-copy", Summary: "Review conversion copy.", Outcome: "Reviewed copy."},
	}
}

func canon(t *testing.T, b []byte) string {
	t.Helper()
	c, err := Canonical(b)
	if err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	return string(c)
}

func TestJCSVectorOfRFC8785(t *testing.T) {
	got, err := Canonical(read(t, "jcs-rfc8785-3.2.2.input.json"))
	if err != nil {
		t.Fatal(err)
	}
	if want := read(t, "jcs-rfc8785-3.2.2.output.json"); !bytes.Equal(got, want) {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

func TestPeerCardExampleOfThePage(t *testing.T) {
	e := expected(t)
	raw := read(t, "peer-card.json")
	card, err := ParsePeerCard(raw)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(card.Capabilities, e.Card.Capabilities) {
		t.Fatalf("capabilities %v", card.Capabilities)
	}
	// Strip the brief members, project the page's catalog: the same card.
	card.Capabilities = nil
	delete(card.Ext, ExtBrief)
	if err := ProjectPeerCard(card, pageCatalog()); err != nil {
		t.Fatal(err)
	}
	out, err := json.Marshal(card)
	if err != nil {
		t.Fatal(err)
	}
	if (canon(t, out) == canon(t, raw)) != e.Card.Reproduces {
		t.Fatalf("projection:\n%s\npage:\n%s", canon(t, out), canon(t, raw))
	}
}

func TestEmptyCatalogGivesEmptyArrayAndNoBrief(t *testing.T) {
	card, err := ParsePeerCard([]byte(`{"peer_id":"p","capabilities":null,"ext":{"agh.capabilities_brief":[{"id":"x","summary":"y"}],"vendor.key":{"a":1}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := ProjectPeerCard(card, nil); err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(card)
	if got := canon(t, out); got != `{"capabilities":[],"ext":{"vendor.key":{"a":1}},"peer_id":"p"}` {
		t.Fatalf("got %s", got)
	}
}

func TestWhoisExampleOfThePage(t *testing.T) {
	e := expected(t)
	var req struct {
		Ext json.RawMessage `json:"ext"`
	}
	json.Unmarshal(read(t, "whois-request.json"), &req)
	wr, err := ParseWhoisRequest(req.Ext)
	if err != nil {
		t.Fatal(err)
	}
	if wr.Rich != e.Request.Rich || !reflect.DeepEqual(wr.IDs, e.Request.IDs) {
		t.Fatalf("request %+v", wr)
	}
	cat, err := RichCatalog(pageCatalog(), wr, 64<<10)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range cat.Capabilities {
		ids = append(ids, c.ID)
	}
	if !reflect.DeepEqual(ids, e.Response.CatalogIDs) {
		t.Fatalf("catalog ids %v", ids)
	}
	if cat.Capabilities[0].Digest != e.Response.CanonicalDigest {
		t.Fatalf("canonical digest %s, want %s", cat.Capabilities[0].Digest, e.Response.CanonicalDigest)
	}
	// The page's response entry: same members as our build-site, but its
	// digest is not the canonical digest of the document.
	var resp struct {
		Ext struct {
			Catalog struct {
				Capabilities []json.RawMessage `json:"capabilities"`
			} `json:"agh.capability_catalog"`
		} `json:"ext"`
	}
	json.Unmarshal(read(t, "whois-response.json"), &resp)
	if len(resp.Ext.Catalog.Capabilities) != 1 {
		t.Fatal("page response has no catalog entry")
	}
	_, err = VerifyCapability(resp.Ext.Catalog.Capabilities[0])
	if got := errName(err); got != e.Response.PageDigest {
		t.Fatalf("page digest: %v, want %s", err, e.Response.PageDigest)
	}
	// With the canonical digest, the same entry verifies; so does our transfer.
	fixed := bytes.Replace(resp.Ext.Catalog.Capabilities[0], []byte("sha256:4ac7c4d8f64f35672e0e46ae7b8cfb2fd8d8a48fd6a0f4f37ab89f4459ef560f"), []byte(e.Response.CanonicalDigest), 1)
	if _, err := VerifyCapability(fixed); err != nil {
		t.Fatal(err)
	}
	body, err := TransferBody(pageCatalog()[0])
	if err != nil {
		t.Fatal(err)
	}
	var tb struct {
		Capability json.RawMessage `json:"capability"`
	}
	json.Unmarshal(body, &tb)
	got, err := VerifyCapability(tb.Capability)
	if err != nil || got.Digest != cat.Capabilities[0].Digest || got.ID != "build-site" {
		t.Fatalf("transfer and rich catalog disagree: %v", err)
	}
}

func errName(err error) string { return string(amp.NameOf(err)) }

func TestCatalogFilterPreservesOrderAndRules(t *testing.T) {
	cat := []Capability{{ID: "c", Summary: "s", Outcome: "o"}, {ID: "a", Summary: "s", Outcome: "o"}, {ID: "b", Summary: "s", Outcome: "o"}}
	cases := []struct {
		name string
		ext  string
		want []string // nil: no catalog at all
	}{
		{"no include", `{}`, nil},
		{"include without the catalog", `{"agh.include":["something_else"]}`, nil},
		{"unknown include values ignored", `{"agh.include":["future","capability_catalog"]}`, []string{"c", "a", "b"}},
		{"filter keeps catalog order", `{"agh.include":["capability_catalog"],"agh.capability_ids":["b","c"]}`, []string{"c", "b"}},
		{"unknown ids give []", `{"agh.include":["capability_catalog"],"agh.capability_ids":["zzz"]}`, []string{}},
		{"empty filter gives []", `{"agh.include":["capability_catalog"],"agh.capability_ids":[]}`, []string{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			wr, err := ParseWhoisRequest([]byte(c.ext))
			if err != nil {
				t.Fatal(err)
			}
			got, err := RichCatalog(cat, wr, 0)
			if err != nil {
				t.Fatal(err)
			}
			if c.want == nil {
				if got != nil {
					t.Fatal("catalog attached without agh.include")
				}
				return
			}
			out, _ := json.Marshal(got)
			ids := []string{}
			for _, x := range got.Capabilities {
				ids = append(ids, x.ID)
			}
			if !reflect.DeepEqual(ids, c.want) || bytes.Contains(out, []byte("null")) {
				t.Fatalf("got %s", out)
			}
		})
	}
	if _, err := RichCatalog(cat, WhoisRequest{Rich: true}, 10); errName(err) != string(ErrTooLarge) {
		t.Fatalf("oversized catalog emitted: %v", err)
	}
}

func TestTamperedTransferFailsVerification(t *testing.T) {
	body, err := TransferBody(Capability{ID: "x", Summary: "s", Outcome: "o", Extra: map[string]json.RawMessage{"vendor.note": json.RawMessage(`"kept"`)}})
	if err != nil {
		t.Fatal(err)
	}
	var tb struct {
		Capability json.RawMessage `json:"capability"`
	}
	json.Unmarshal(body, &tb)
	c, err := VerifyCapability(tb.Capability)
	if err != nil || string(c.Extra["vendor.note"]) != `"kept"` {
		t.Fatalf("round trip lost the unknown key or failed: %v", err)
	}
	for _, mut := range [][2]string{{`"outcome":"o"`, `"outcome":"O"`}, {`"kept"`, `"changed"`}, {`"id":"x"`, `"id":"y"`}} {
		bad := bytes.Replace(tb.Capability, []byte(mut[0]), []byte(mut[1]), 1)
		if bytes.Equal(bad, tb.Capability) {
			t.Fatalf("mutation %s did not apply", mut[0])
		}
		if _, err := VerifyCapability(bad); errName(err) != string(ErrVerificationFailed) {
			t.Fatalf("mutation %s: %v", mut[0], err)
		}
	}
}

// Different documents must never share a canonical form: encoding/json
// alone maps invalid UTF-8 and lone surrogates to U+FFFD, so each of these
// would digest like the document with a literal U+FFFD.
func TestCanonicalDigestCollisionByLoneSurrogateOrInvalidUTF8(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		ok        bool
	}{
		{"lone high surrogate", `{"a":"\ud800"}`, false},
		{"lone low surrogate", `{"a":"\udc00x"}`, false},
		{"high then non-low escape", `["\ud800\u0041"]`, false},
		{"invalid utf-8 byte", "{\"a\":\"\xff\"}", false},
		{"invalid utf-8 in a name", "{\"\xc3\":1}", false},
		{"surrogate pair", `["\ud83d\ude00"]`, true},
		{"escaped backslash then u", `["\\ud800"]`, true},
		{"literal replacement char", `["` + "\uFFFD" + `"]`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Canonical([]byte(tc.doc))
			if (err == nil) != tc.ok {
				t.Fatalf("Canonical(%q) err = %v, want ok=%v", tc.doc, err, tc.ok)
			}
		})
	}
}

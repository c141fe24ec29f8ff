package agh

import (
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/internal/testalloc"
)

// TestOversizedAnswerIsRefusedBeforeItIsEncoded: attack: a summary is
// the first line of a descriptor's notes, which a publisher writes and a
// signed manifest of up to 16 MiB carries, and one bundle may hold 10,000
// capabilities. With one summary of 8 MiB in the store, every
// unauthenticated GET of the peer card or of the catalog allocated about
// 80 MiB, and of that capability's transfer about 160 MiB (copies of the
// summary in every encoding, the digest and the signing input), and
// spent up to 0.4 s of CPU, for an answer then refused as too_large.
// The handler now refuses an answer whose capabilities alone take more
// than MaxBytes (a lower bound of their encoding, summed without
// encoding anything) before building it, so a request costs at most
// what building an answer of MaxBytes costs (AGH-16); an answer that
// fits is unchanged.
func TestOversizedAnswerIsRefusedBeforeItIsEncoded(t *testing.T) {
	_, key, _ := ed25519.GenerateKey(nil)
	good := Capability{ID: "org.good.y:1.0.0", Summary: "Translate text.", Outcome: "o"}
	wide := []Capability{{ID: "org.evil.x:1.0.0", Summary: strings.Repeat("a", 8<<20), Outcome: "o"}, good}
	many := make([]Capability, 0, 100_001)
	for i := range 100_000 {
		many = append(many, Capability{ID: fmt.Sprintf("org.evil.n%06d:1.0.0", i), Summary: strings.Repeat("s", 120), Outcome: "o"})
	}
	many = append(many, good)
	for _, tc := range []struct {
		name    string
		catalog []Capability
		target  string
	}{
		{"peer card, one summary of 8 MiB", wide, PeerCardPath},
		{"catalog, one summary of 8 MiB", wide, CatalogPath},
		{"transfer, a summary of 8 MiB", wide, CapabilityPrefix + "org.evil.x:1.0.0"},
		{"peer card, 100,000 capabilities", many, PeerCardPath},
		{"catalog, 100,000 capabilities", many, CatalogPath},
	} {
		// A handler of its own for each run, each run its first
		// request: a handler keeps the peer card and catalog answers it
		// built, a refusal too (AGH-19), and would serve a second
		// request of them from there.
		hs := make([]http.Handler, testalloc.Runs)
		for i := range hs {
			hs[i] = NewHandler(HandlerOptions{Catalog: func() ([]Capability, error) { return tc.catalog, nil },
				Signer: &Signer{Key: key}, Now: func() time.Time { return time.Unix(1776366061, 0) }})
		}
		run := 0
		got := testalloc.Least(func() {
			rec := httptest.NewRecorder()
			hs[run].ServeHTTP(rec, httptest.NewRequest("GET", tc.target, nil))
			run++
			if rec.Code != http.StatusInternalServerError || !strings.Contains(rec.Body.String(), `"too_large"`) {
				t.Fatalf("%s: %d %.80s, want 500 too_large", tc.name, rec.Code, rec.Body)
			}
		})
		h := hs[0]
		// Budget: what building an answer of MaxBytes costs (the
		// digests of about 4,000 capabilities: some 10 times it).
		if budget := uint64(16 * MaxDocumentBytes); got > budget {
			t.Errorf("%s: one request allocated %d MiB for a refused answer (budget %d MiB)", tc.name, got>>20, budget>>20)
		}
		// A narrowed request is answered as before.
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", CatalogPath+"?id="+good.ID, nil))
		if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), good.Summary) {
			t.Fatalf("%s: the narrowed catalog: %d %.80s", tc.name, rec.Code, rec.Body)
		}
	}
}

// TestEncodedSizeBoundIsALowerBound: the sizes the refusal is judged on
// never exceed what is sent, so nothing that fits is refused.
func TestEncodedSizeBoundIsALowerBound(t *testing.T) {
	cat := append(pageCatalog(), Capability{ID: "z", Summary: "s", Outcome: "o"},
		Capability{ID: "x", Summary: "\x01<\xff", Outcome: "é", Examples: json.RawMessage(" [ 1 , 2 ] "),
			Requirements: json.RawMessage(" null "), Extra: map[string]json.RawMessage{"k": json.RawMessage(`{ "a" : "b c" }`), "id": json.RawMessage(`"long shadowed id"`)}},
		Capability{ID: "y", Summary: "s", Outcome: "o", Digest: strings.Repeat("d", 500)})
	for _, c := range cat {
		d, err := c.WithDigest()
		if err != nil {
			t.Fatal(err)
		}
		sent, _ := d.MarshalJSON()
		if least := minDigestedEntry + c.encodedAtLeast(); least > len(sent) {
			t.Errorf("%s: bound %d over the %d bytes sent", c.ID, least, len(sent))
		}
	}
	card := &PeerCard{}
	if err := ProjectPeerCard(card, cat); err != nil {
		t.Fatal(err)
	}
	sent, _ := card.MarshalJSON()
	if briefAtLeast(cat) > len(sent) {
		t.Errorf("brief bound %d over the %d bytes sent", briefAtLeast(cat), len(sent))
	}
}

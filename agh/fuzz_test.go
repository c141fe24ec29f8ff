package agh

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func seedFiles(f *testing.F) {
	names, _ := filepath.Glob(filepath.Join("..", "testdata", "agh", "*.json"))
	if len(names) == 0 {
		f.Fatal("no seed files")
	}
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
}

// FuzzParsePeerCard: an accepted card survives a round trip, and a
// projection never writes capabilities as null.
func FuzzParsePeerCard(f *testing.F) {
	seedFiles(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		card, err := ParsePeerCard(data)
		if err != nil {
			return
		}
		out, err := json.Marshal(card)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ParsePeerCard(out); err != nil {
			t.Fatalf("round trip: %v", err)
		}
		if err := ProjectPeerCard(card, nil); err != nil {
			t.Fatal(err)
		}
		var m map[string]json.RawMessage
		out, _ = json.Marshal(card)
		json.Unmarshal(out, &m)
		if string(m["capabilities"]) != "[]" {
			t.Fatalf("capabilities %s", m["capabilities"])
		}
	})
}

// FuzzCatalogFilter: the filtered catalog is a subsequence of the catalog
// in catalog order, never null.
func FuzzCatalogFilter(f *testing.F) {
	f.Add([]byte(`{"agh.include":["capability_catalog"],"agh.capability_ids":["b","a"]}`))
	f.Add([]byte(`{"agh.include":"capability_catalog"}`))
	cat := []Capability{{ID: "a", Summary: "s", Outcome: "o"}, {ID: "b", Summary: "s", Outcome: "o"}, {ID: "c", Summary: "s", Outcome: "o"}}
	f.Fuzz(func(t *testing.T, ext []byte) {
		wr, err := ParseWhoisRequest(ext)
		if err != nil {
			return
		}
		got, err := RichCatalog(cat, wr, 0)
		if err != nil {
			t.Fatal(err)
		}
		if got == nil {
			if wr.Rich {
				t.Fatal("rich request without a catalog")
			}
			return
		}
		if got.Capabilities == nil {
			t.Fatal("null capabilities")
		}
		i := 0
		for _, c := range got.Capabilities {
			for i < len(cat) && cat[i].ID != c.ID {
				i++
			}
			if i == len(cat) {
				t.Fatalf("%s out of catalog order", c.ID)
			}
		}
	})
}

// FuzzVerifyCapability: a document that verifies keeps verifying after a
// round trip through this package.
func FuzzVerifyCapability(f *testing.F) {
	seedFiles(f)
	f.Add([]byte(`{"id":"x","summary":"s","outcome":"o","digest":"sha256:00"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseCapability(data)
		if err != nil {
			return
		}
		body, err := TransferBody(c)
		if err != nil {
			return
		}
		var tb struct {
			Capability json.RawMessage `json:"capability"`
		}
		if err := json.Unmarshal(body, &tb); err != nil {
			t.Fatal(err)
		}
		if _, err := VerifyCapability(tb.Capability); err != nil {
			t.Fatalf("own transfer does not verify: %v\n%s", err, tb.Capability)
		}
	})
}

// FuzzParseCatalogQuery: an accepted query asks for the catalog, and each
// id it names is non-empty and trimmed.
func FuzzParseCatalogQuery(f *testing.F) {
	for _, s := range []string{"", "id=a", "id=a&id=b", "id=", "ids=a", "id=%zz", "id=a;b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		req, err := ParseCatalogQuery(q)
		if err != nil {
			return
		}
		if !req.Rich {
			t.Fatal("catalog query without the catalog")
		}
		for _, id := range req.IDs {
			if id == "" || id != strings.TrimSpace(id) {
				t.Fatalf("id %q", id)
			}
		}
	})
}

// FuzzReceiveTransfer: any input is refused by name or accepted; an
// accepted envelope is accepted again after its members are reordered and
// re-spaced (the proof covers the canonical form, not the bytes), and a
// verified one names a key of its from.
func FuzzReceiveTransfer(f *testing.F) {
	seedFiles(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		o := ReceiveOptions{Now: clock, AllowUnverified: true}
		tr, err := ReceiveTransfer(data, o)
		if err != nil {
			if errName(err) == "" {
				t.Fatalf("unnamed refusal: %v", err)
			}
			return
		}
		if tr.Verified && !strings.HasPrefix(tr.KeyID, tr.From) {
			t.Fatalf("verified by %s for %s", tr.KeyID, tr.From)
		}
		var m map[string]json.RawMessage
		json.Unmarshal(data, &m)
		again, _ := json.MarshalIndent(m, "", " ")
		if _, err := ReceiveTransfer(again, o); err != nil {
			t.Fatalf("re-encoded envelope refused: %v", err)
		}
	})
}

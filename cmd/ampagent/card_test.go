package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/ampbundle/ampbundle/agh"
	"github.com/ampbundle/ampbundle/keyfile"
	"github.com/ampbundle/ampbundle/resolver"
)

// cardStore is a closed store holding the translate sample.
func cardStore(t *testing.T, withBundle bool) string {
	t.Helper()
	db := filepath.Join(t.TempDir(), "store.db")
	s, err := resolver.Open(db, resolver.Options{Now: testNow, Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	pub, err := keyfile.ParsePublic(filepath.Join(samplesDir, "keys", "TEST-ONLY-example-publisher.pub.pem"))
	if err != nil {
		t.Fatal(err)
	}
	s.TrustAdd("example", pub, []string{"org.example"})
	if withBundle {
		f, err := os.Open(filepath.Join(samplesDir, "translate.ampb"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := s.Import(context.Background(), f, resolver.ImportOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return db
}

type cardDoc struct {
	PeerCard struct {
		Capabilities []string                   `json:"capabilities"`
		Ext          map[string]json.RawMessage `json:"ext"`
	} `json:"peer_card"`
	Ext map[string]agh.CatalogExt `json:"ext"`
}

func TestCardProjectsTheStoreCatalog(t *testing.T) {
	db := cardStore(t, true)
	r := runCLI(t, "", "card", "--db", db, "--json", "--catalog", "--id", "org.example.translate.text:2.1.0", "--id", "org.example.translate.text:1.0.0")
	if r.code != 0 {
		t.Fatalf("exit %d: %s %s", r.code, r.stdout, r.stderr)
	}
	var doc cardDoc
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatal(err)
	}
	ids := doc.PeerCard.Capabilities
	if len(ids) < 2 || doc.PeerCard.Ext[agh.ExtBrief] == nil {
		t.Fatalf("card %s", r.stdout)
	}
	var brief []agh.BriefEntry
	json.Unmarshal(doc.PeerCard.Ext[agh.ExtBrief], &brief)
	for i := range ids {
		if brief[i].ID != ids[i] {
			t.Fatalf("brief %d is %s, capabilities %s", i, brief[i].ID, ids[i])
		}
	}
	rich := doc.Ext[agh.ExtCatalog].Capabilities
	if len(rich) != 2 || rich[0].ID != "org.example.translate.text:1.0.0" || rich[1].ID != "org.example.translate.text:2.1.0" {
		t.Fatalf("rich catalog not filtered in catalog order: %s", r.stdout)
	}
	// The transfer document of the same capability carries the same digest.
	r = runCLI(t, "", "card", "--db", db, "--transfer", "org.example.translate.text:2.1.0")
	var tb struct {
		Capability json.RawMessage `json:"capability"`
	}
	json.Unmarshal([]byte(r.stdout), &tb)
	c, err := agh.VerifyCapability(tb.Capability)
	if err != nil || c.Digest != rich[1].Digest {
		t.Fatalf("transfer %v, digest %s vs %s", err, c.Digest, rich[1].Digest)
	}
}

func TestCardOfAnEmptyStoreHasEmptyCapabilities(t *testing.T) {
	r := runCLI(t, "", "card", "--db", cardStore(t, false), "--json")
	var doc map[string]map[string]json.RawMessage
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stdout)
	}
	if string(doc["peer_card"]["capabilities"]) != "[]" || doc["peer_card"]["ext"] != nil {
		t.Fatalf("card %s", r.stdout)
	}
}

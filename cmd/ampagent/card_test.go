package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

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
	// The transfer of the same capability is an agh-network/v0 envelope
	// signed by the agent key, carrying the same digest.
	key, did := keygen(t, t.TempDir(), "agent.key")
	r = runCLI(t, "", "card", "--db", db, "--key", key, "--transfer", "org.example.translate.text:2.1.0")
	tr, err := agh.ReceiveTransfer([]byte(r.stdout), agh.ReceiveOptions{Now: func() time.Time { return time.UnixMilli(1707055260000) }})
	if err != nil || !tr.Verified || tr.From != did || tr.Capability.Digest != rich[1].Digest {
		t.Fatalf("transfer %s: %v", r.stdout, err)
	}
}

// The card carries every member of the seed's example, with the trust
// modes the agent really has: "unverified" alone without a key, the signed
// mode and the key's DID as peer_id with one.
func TestCardHasEverySeedMemberAndTrueTrustModes(t *testing.T) {
	db := cardStore(t, true)
	key, did := keygen(t, t.TempDir(), "agent.key")
	for _, tc := range []struct {
		args         []string
		peerID, mode string
	}{
		{nil, `"ampagent"`, `["unverified"]`},
		{[]string{"--key", key}, `"` + did + `"`, `["unverified","` + agh.ProofType + `"]`},
		{[]string{"--key", key, "--peer-id", "p"}, `"p"`, `["unverified","` + agh.ProofType + `"]`},
	} {
		r := runCLI(t, "", append([]string{"card", "--db", db}, tc.args...)...)
		var doc map[string]map[string]json.RawMessage
		if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || r.code != 0 {
			t.Fatalf("exit %d: %s %s", r.code, r.stdout, r.stderr)
		}
		card := doc["peer_card"]
		for _, k := range []string{"peer_id", "display_name", "profiles_supported", "capabilities", "artifacts_supported", "trust_modes_supported", "ext"} {
			if card[k] == nil {
				t.Fatalf("%v: card lacks %s", tc.args, k)
			}
		}
		var modes bytes.Buffer
		json.Compact(&modes, card["trust_modes_supported"])
		if string(card["peer_id"]) != tc.peerID || modes.String() != tc.mode {
			t.Fatalf("%v: card %s", tc.args, r.stdout)
		}
	}
}

// A transfer is never printed unsigned by mistake: --transfer without the
// agent key is a usage error, and nothing is printed.
func TestCardTransferWithoutAKeyIsRefused(t *testing.T) {
	r := runCLI(t, "", "card", "--db", cardStore(t, true), "--transfer", "org.example.translate.text:2.1.0")
	if r.code != 2 || r.stdout != "" {
		t.Fatalf("exit %d: %s", r.code, r.stdout)
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

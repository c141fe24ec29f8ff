//go:build unix

package main

import (
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/ampbundle/ampbundle/agh"
	"github.com/ampbundle/ampbundle/mirror"
)

func getBody(t *testing.T, url string) (int, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// The agent serves its capabilities document always, and the AGH
// projection of its store only with --agh.
func TestServeWellKnownAndAGHWhenEnabled(t *testing.T) {
	db, key := serveStore(t)
	r := startServe(t, "--db", db, "--key", key, "--allow", "*=org.example.", "--agh")
	code, body := getBody(t, r.url+mirror.WellKnownPath)
	caps, err := mirror.DecodeCapabilities(body)
	if code != 200 || err != nil {
		t.Fatalf("well-known: %d %v %s", code, err, body)
	}
	if caps.Generation == 0 || caps.Endpoints["messages"] != "/amp/v1/messages" || caps.Endpoints["agh_peer_card"] != agh.PeerCardPath {
		t.Fatalf("well-known %s", body)
	}
	code, body = getBody(t, r.url+agh.PeerCardPath)
	card, err := agh.ParsePeerCard(body)
	if code != 200 || err != nil || len(card.Capabilities) == 0 || string(card.Extra["peer_id"]) == "" {
		t.Fatalf("peer card: %d %v %s", code, err, body)
	}
	want := card.Capabilities[len(card.Capabilities)-1]
	code, body = getBody(t, r.url+agh.CatalogPath+"?id="+want+"&id=unknown")
	var doc map[string]agh.CatalogExt
	if err := json.Unmarshal(body, &doc); code != 200 || err != nil || len(doc[agh.ExtCatalog].Capabilities) != 1 || doc[agh.ExtCatalog].Capabilities[0].ID != want {
		t.Fatalf("catalog: %d %s", code, body)
	}
	code, body = getBody(t, r.url+agh.CapabilityPrefix+want)
	var tb struct {
		Capability json.RawMessage `json:"capability"`
	}
	json.Unmarshal(body, &tb)
	if c, err := agh.VerifyCapability(tb.Capability); code != 200 || err != nil || c.Digest != doc[agh.ExtCatalog].Capabilities[0].Digest {
		t.Fatalf("transfer: %d %v %s", code, err, body)
	}
	for _, p := range []string{agh.CatalogPath + "?ids=<x>", agh.CapabilityPrefix + "nope"} {
		code, body = getBody(t, r.url+p)
		var env struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		if json.Unmarshal(body, &env) != nil || code < 400 || env.Error.Code == "" || len(body) > 200 {
			t.Fatalf("%s: %d %s", p, code, body)
		}
	}
}

func TestServeWithoutAGHServesNoCard(t *testing.T) {
	db, key := serveStore(t)
	r := startServe(t, "--db", db, "--key", key, "--allow", "*=org.example.")
	if code, _ := getBody(t, r.url+agh.PeerCardPath); code != http.StatusNotFound {
		t.Fatalf("peer card without --agh: %d", code)
	}
	if code, _ := getBody(t, r.url+mirror.WellKnownPath); code != 200 {
		t.Fatalf("well-known: %d", code)
	}
}

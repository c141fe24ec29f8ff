package mirror

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/capability"
)

// otherBundle signs a one-capability bundle org.example.other at version
// 1: a second publisher line beside testBundle's.
func otherBundle(t *testing.T) []byte {
	t.Helper()
	schema := []byte(`{"type":"object","title":"other v1"}`)
	version, err := capability.ParseVersion("1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	var file bytes.Buffer
	if _, err := bundle.Write(&file, &bundle.Draft{
		BundleID: "org.example.other", Version: 1, CreatedAt: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC),
		Artifacts: []bundle.Source{bundle.BytesSource("other.json", bundle.MediaTypeSchema, schema)},
		Capabilities: []capability.Descriptor{{Name: "org.example.other", Version: version,
			InputSchema: capability.SchemaRef{ArtifactKey: "other.json"}, OutputSchema: capability.SchemaRef{ArtifactKey: "other.json"}}},
	}, []ed25519.PrivateKey{testKey}, bundle.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	return file.Bytes()
}

// forgeStoredCosignature flips one bit of every copy of sig (a
// co-signature by a key the store does not trust) in the store file at
// p: what a build before TRUST-20 kept when it imported a copy with a
// garbage co-signature under that key's kid.
func forgeStoredCosignature(t *testing.T, p string, sig []byte) {
	t.Helper()
	raw, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for i := 0; ; {
		j := bytes.Index(raw[i:], sig)
		if j < 0 {
			break
		}
		raw[i+j] ^= 0x01
		i += j + len(sig)
		n++
	}
	if n == 0 {
		t.Fatal("the co-signature is not in the store file")
	}
	if err := os.WriteFile(p, raw, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestReview94ForgedCopyKeptByAnEarlierBuildTakesTheWholeMirrorOutOfRotation
//
// Attack: a store that a build before TRUST-20 filled holds one bundle
// whose stored file carries a forged co-signature (under the kid of a key
// the store does not trust). The store check names it (kind signature)
// and the mirror already leaves that bundle out of its index (Export
// refuses it), serving every other bundle and statement soundly. But
// /readyz mapped every store-check problem to integrity/store_damaged,
// 503: a load balancer or an orchestrator's readiness probe (MIRROR-9:
// "needs only the status code") takes every replica over that store out
// of rotation, and every syncing site loses every other publisher's
// versions and revocations, until the operator finds the publisher's
// file of that one release.
//
// Defence (docs/SPEC-DECISIONS.md MIRROR-19): such a problem is
// integrity/bundle_signature_invalid, Degraded; a report whose problems
// are all degraded is 200, status "degraded" (the operator, the log and
// `ampbundle check` still name it). Any other problem, even one past the
// 50 a report lists, is still 503 not_ready.
func TestForgedCopyKeptByAnEarlierBuildTakesTheWholeMirrorOutOfRotation(t *testing.T) {
	officer := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{94}, ed25519.SeedSize)) // trusted by no one here
	var cb bytes.Buffer
	if _, err := bundle.Cosign(&cb, bytes.NewReader(testBundle(t, 1)), officer,
		bundle.CosignOptions{Now: func() time.Time { return testNow }}); err != nil {
		t.Fatal(err)
	}
	in, err := bundle.Inspect(bytes.NewReader(cb.Bytes()), 0)
	if err != nil {
		t.Fatal(err)
	}
	var sig []byte
	for _, s := range in.Signatures {
		if s.KID == amp.DIDKey(officer.Public().(ed25519.PublicKey)) {
			sig = s.Sig
		}
	}
	if sig == nil {
		t.Fatal("no co-signature in the co-signed file")
	}
	p := newStore(t, cb.Bytes(), otherBundle(t))
	forgeStoredCosignature(t, p, sig)

	_, ts := startMirror(t, p, nil)
	code, rep := readyOf(t, ts.URL)
	resp, body := get(t, http.MethodGet, ts.URL+"/index.json", nil)
	var ix Index
	if resp.StatusCode != 200 || json.Unmarshal(body, &ix) != nil {
		t.Fatalf("/index.json: %d %s", resp.StatusCode, body)
	}
	listed := map[string]bool{}
	for _, e := range ix.Bundles {
		listed[e.BundleID] = true
	}
	if listed["org.example.echo"] || !listed["org.example.other"] {
		t.Fatalf("index lists %v: want the forged copy left out and the other bundle served", listed)
	}
	if code != 200 || rep.Status != "degraded" || !hasProblem(rep, "integrity", "bundle_signature_invalid") || hasProblem(rep, "integrity", "store_damaged") {
		t.Fatalf("/readyz over a store whose one bundle carries a forged co-signature: %d %+v; want 200 degraded with bundle_signature_invalid, the rest served", code, rep)
	}

	// Real damage beside it, listed or past the list's bound, stays 503.
	degraded := ReadyProblem{Check: "integrity", Code: "bundle_signature_invalid", Degraded: true}
	damaged := ReadyProblem{Check: "integrity", Code: "store_damaged"}
	for _, c := range []struct {
		name string
		ps   []ReadyProblem
		want int
	}{
		{"degraded alone", []ReadyProblem{degraded}, 200},
		{"damage after", []ReadyProblem{degraded, damaged}, 503},
		{"damage past the bound", append(slices.Repeat([]ReadyProblem{degraded}, maxReadyProblems), damaged), 503},
	} {
		rep := ReadyReport{Problems: []ReadyProblem{}}
		for _, p := range c.ps {
			rep.Add(p)
		}
		rep.Settle()
		rec := httptest.NewRecorder()
		ServeReady(rec, rep)
		if rec.Code != c.want {
			t.Errorf("%s: %d (%s), want %d", c.name, rec.Code, rep.Status, c.want)
		}
	}
}

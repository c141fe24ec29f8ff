package mirror

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"net/http/httptest"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
)

// TestOneAuthoritysRefusalsDoNotKeepBackAnothersRevocation: MIRROR-12
// capped the refusals of files signed as the store requires at 64 a run,
// counted over statements, bundles and heartbeats of every signer
// together. Any publisher the host trusts for some scope, however narrow
// (here otherKey for com.vendor), signs files the store refuses at will
// (trust statements adding a key under a name in use: trust_exists, each
// distinct); listed before a genuine revocation of another publisher,
// they used up the cap and the revocation was too_many_refusals, again
// every run once the generation moved. The cap now counts per kind and
// signer keys (MIRROR-13): the revocation is applied in run 1 and stays
// applied after the generation moves.
func TestOneAuthoritysRefusalsDoNotKeepBackAnothersRevocation(t *testing.T) {
	hm := newRepeatMirror(t)
	for i := range MaxStoreRefusals {
		add := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{byte(120 + i)}, ed25519.SeedSize))
		r := &bundle.Rotation{Format: bundle.RotationFormat, Scope: "com.vendor", Sequence: 1, Prev: make([]byte, 32),
			CreatedAt: "2026-11-20T10:00:00Z", Threshold: 1,
			Add: []bundle.NamedKey{{Name: "example", Key: amp.DIDKey(add.Public().(ed25519.PublicKey))}}}
		r.Normalize()
		data, err := bundle.SignRotation(r, []ed25519.PrivateKey{otherKey})
		if err != nil {
			t.Fatal(err)
		}
		hm.statement(data)
	}
	genuine := revokedEcho1(t, testKey)
	hm.statement(genuine)
	ts := httptest.NewServer(hm)
	defer ts.Close()
	s := agentStore(t, testBundle(t, 1))
	if err := s.TrustAdd("other", otherKey.Public().(ed25519.PublicKey), []string{"com.vendor"}); err != nil {
		t.Fatal(err)
	}
	rep, err := syncOnce(t, s, ts.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	verdicts := map[string]int{}
	for _, it := range rep.Statements[:MaxStoreRefusals] {
		verdicts[it.Error]++
	}
	gsum := sha256.Sum256(genuine)
	has1, _ := s.HasStatement(gsum[:])
	// The generation moves between runs (here a heartbeat of the
	// installed line applied from elsewhere; an operator's import does
	// the same): RefusedAt answers only at the generation of the
	// refusal, so the same 64 files are offered and refused again, and
	// the cap keeps the revocation back again without a new signature.
	if _, err := s.ApplyHeartbeat(signedHeartbeat(t, 2, "2026-11-20T11:00:00Z", testKey)); err != nil {
		t.Fatal(err)
	}
	rep2, err := syncOnce(t, s, ts.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	has2, _ := s.HasStatement(gsum[:])
	if !has1 || !has2 {
		t.Fatalf("the genuine revocation of org.example.echo 1, listed after %d refused statements of another trusted publisher (%v): "+
			"applied after run 1: %v (%s); after the generation moved, run 2: %v (%s); want applied in run 1",
			MaxStoreRefusals, verdicts, has1, rep.Statements[len(rep.Statements)-1].Error, has2, rep2.Statements[len(rep2.Statements)-1].Error)
	}
}

// TestBundleRefusalsDoNotKeepBackHeartbeats: the same cap needed no
// rogue key. An honest mirror lists 64 genuine bundles of versions the
// host revoked, then the publisher's genuine heartbeat of the installed
// line: the 64 refusals used up the cap and the heartbeat was
// too_many_refusals, in every run once the store moved between runs, so
// under a freshness policy the line went stale and failed closed. Each
// kind of file now has its own cap (MIRROR-13): the heartbeat is applied.
func TestBundleRefusalsDoNotKeepBackHeartbeats(t *testing.T) {
	hm := newRepeatMirror(t)
	var revoked []bundle.BundleVersion
	for i := range MaxStoreRefusals {
		id := "org.example.r" + string(rune('a'+i/26)) + string(rune('a'+i%26))
		hm.bundle(t, signedBundle(t, id, testKey))
		revoked = append(revoked, bundle.BundleVersion{BundleID: id, Version: 1})
	}
	hb := signedHeartbeat(t, 2, "2026-11-20T11:00:00Z", testKey)
	hm.heartbeat(t, hb)
	ts := httptest.NewServer(hm)
	defer ts.Close()
	s := agentStore(t, testBundle(t, 1))
	if _, err := s.ApplyRevocation(signedRevocation(t, nil, revoked, testKey)); err != nil {
		t.Fatal(err)
	}
	var outcomes []string
	for run := range 2 {
		rep, err := syncOnce(t, s, ts.URL, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Heartbeats) != 1 {
			t.Fatalf("run %d: heartbeats %+v", run+1, rep.Heartbeats)
		}
		outcomes = append(outcomes, string(rep.Heartbeats[0].Outcome)+"/"+rep.Heartbeats[0].Error)
		if rep.Heartbeats[0].Outcome == OutcomeImported {
			return
		}
		// The store moves between runs (an unrelated trust change).
		if err := s.TrustAdd("run"+string(rune('0'+run)), ed25519.NewKeyFromSeed(bytes.Repeat([]byte{byte(200 + run)}, ed25519.SeedSize)).Public().(ed25519.PublicKey), []string{"net.unrelated"}); err != nil {
			t.Fatal(err)
		}
	}
	t.Fatalf("the publisher's genuine heartbeat, listed after %d genuine bundles of revoked versions, in two runs with the store changed between: %v; want applied",
		MaxStoreRefusals, outcomes)
}

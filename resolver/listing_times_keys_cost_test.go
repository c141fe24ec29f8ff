package resolver

import (
	"bytes"
	"crypto/ed25519"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/capability"
	bolt "go.etcd.io/bbolt"
)

// lineBundle is bundle org.example.lineI, version 1, of one capability,
// signed by the example publisher, expiring at exp (nil: never).
func lineBundle(t testing.TB, i int, exp *time.Time) []byte {
	t.Helper()
	id := fmt.Sprintf("org.example.line%04d", i)
	d := &bundle.Draft{BundleID: id, Version: 1, CreatedAt: testNow.Add(-48 * time.Hour), ExpiresAt: exp}
	in, out := "capabilities/"+id+".op/1.0.0/input.schema.json", "capabilities/"+id+".op/1.0.0/output.schema.json"
	d.Artifacts = append(d.Artifacts, bundle.BytesSource(in, bundle.MediaTypeSchema, []byte(`{"type":"object"}`)),
		bundle.BytesSource(out, bundle.MediaTypeSchema, []byte(`{"type":"object","properties":{}}`)))
	v, _ := capability.ParseVersion("1.0.0")
	d.Capabilities = []capability.Descriptor{{Name: id + ".op", Version: v,
		InputSchema: capability.SchemaRef{ArtifactKey: in}, OutputSchema: capability.SchemaRef{ArtifactKey: out}}}
	var buf bytes.Buffer
	if _, err := bundle.Write(&buf, d, []ed25519.PrivateKey{sampleKey(t, "example-publisher")}, bundle.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// mintedKey is the i-th key of an authority's account (TRUST-25).
func mintedKey(i int) ed25519.PrivateKey {
	seed := make([]byte, ed25519.SeedSize)
	seed[0], seed[1], seed[2] = byte(i), byte(i>>8), 0x5c
	return ed25519.NewKeyFromSeed(seed)
}

// linesStore is a store of n one-capability bundles, each with a
// heartbeat of its line kept, under a freshness policy bounding their
// age; every other one expires a day after the
// clock's now, and a key that signed them has signed a time two days
// after it (a bundle of another line: its floor passes their expiry).
// keys more keys are trusted for org.example, as an authority's
// statements may keep (trust.MaxMintedKeys, TRUST-25); they are written
// in one transaction, what the statements would leave.
func linesStore(t testing.TB, n, keys int) *Store {
	t.Helper()
	s := newStore(t)
	exp := testNow.Add(24 * time.Hour)
	for i := range n {
		var e *time.Time
		if i%2 == 0 {
			e = &exp
		}
		mustImport(t, s, lineBundle(t, i, e))
		hb, err := bundle.SignHeartbeat(&bundle.Heartbeat{Format: bundle.HeartbeatFormat, BundleID: fmt.Sprintf("org.example.line%04d", i), Version: 1,
			CreatedAt: testNow.Add(-47 * time.Hour).Format(time.RFC3339)}, []ed25519.PrivateKey{sampleKey(t, "example-publisher")})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.ApplyHeartbeat(hb); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.SetFreshnessPolicy("*", nil, 365*24*time.Hour); err != nil {
		t.Fatal(err)
	}
	err := s.db.Update(func(tx *bolt.Tx) error {
		for i := range keys {
			name := fmt.Sprintf("minted%04d", i)
			rec := trustRecord{Name: name, Key: pub(mintedKey(i)), Scopes: []string{"org.example"}, AddedAt: "2026-11-01T00:00:00Z"}
			if err := bucket(tx, bTrust).Put([]byte(name), encode(rec)); err != nil {
				return err
			}
		}
		if _, err := s.raiseFloors(tx, testNow.Add(48*time.Hour), []string{amp.DIDKey(pub(sampleKey(t, "example-publisher")))}); err != nil {
			return err
		}
		_, err := bumpGeneration(tx)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.db.View(func(tx *bolt.Tx) error { s.loadFloor(tx); return nil }); err != nil {
		t.Fatal(err)
	}
	return s
}

// changeGeneration makes a change that every per-generation judgement
// must follow: the age bound set again, one day longer.
func changeGeneration(t testing.TB, s *Store, days int) {
	t.Helper()
	if err := s.SetFreshnessPolicy("*", nil, time.Duration(365+days)*24*time.Hour); err != nil {
		t.Fatal(err)
	}
}

// listingCosts are what the listings of a store read after a change:
// ampbundle ls, /readyz and a metrics scrape (Bundles), the agent's
// catalog, built for every query and invocation of a generation and at
// every mirror refresh (Catalog), and a resolve of each bundle's schema
// after it, and the kept heartbeats a mirror serves at every refresh and
// a sync compares (Heartbeats).
var listingCosts = []struct {
	name  string
	limit uint64 // bytes per bundle and trusted key, over the store's own two keys
	run   func(t testing.TB, s *Store)
}{
	{"Bundles", 512, func(t testing.TB, s *Store) {
		bs, err := s.Bundles()
		if err != nil {
			t.Fatal(err)
		}
		for i, b := range bs { // by bundle_id: lineNNNN in order
			if b.Stale != "" || b.Expired != (i%2 == 0) {
				t.Fatalf("listed %+v, want not stale, expired %v", b, i%2 == 0)
			}
		}
	}},
	{"Catalog, then Resolve of each", 512, func(t testing.TB, s *Store) {
		c, err := s.Catalog()
		if err != nil {
			t.Fatal(err)
		}
		for _, es := range c.ByName {
			for _, e := range es {
				if _, err := s.Resolve(e.Descriptor.InputSchema); err != nil {
					t.Fatal(err)
				}
			}
		}
		if len(c.ByName) == 0 {
			t.Fatal("the catalog offers nothing")
		}
	}},
	{"Heartbeats", 192, func(t testing.TB, s *Store) {
		hs, err := s.Heartbeats()
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range hs {
			if !h.Counts {
				t.Fatalf("kept heartbeat %+v does not count; its signer is trusted", h)
			}
		}
	}},
}

// allocated returns the bytes fn allocates.
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestMintedKeysDoNotMakeAListingCostInstalledTimesKeys: one publisher
// key trusted for org.example may have its trust statements keep 1,000
// keys of its account trusted (TRUST-25). Each installed bundle a
// listing judged (stale under a freshness policy, its floor against its
// expiry) loaded the trust state and built the trust policy again,
// encoding every trusted key's did:key (trust.Stale,
// trust.InstalledFloor), and each kept heartbeat the mirror lists
// encoded them all again (trust.Vouches): after any change, the first
// listing, the agent's catalog and the first resolve of each bundle, and
// every heartbeat listing, cost bundles × trusted keys
// (docs/SPEC-DECISIONS.md SCALE-24). Now a listing builds the policy and
// its did:keys once (trust.Prepare), and the catalog's judgements serve
// the resolves. Measured in bytes allocated per bundle and trusted key,
// over what the store's own two keys cost (40 bundles, 300 keys): before,
// 4,501 (Bundles), 4,455 (Catalog and resolves) and 380 (Heartbeats);
// now about 130, 200 and 100. The answers are checked too.
func TestMintedKeysDoNotMakeAListingCostInstalledTimesKeys(t *testing.T) {
	const bundles, keys = 40, 300
	few, many := linesStore(t, bundles, 0), linesStore(t, bundles, keys)
	for i, tc := range listingCosts {
		t.Run(tc.name, func(t *testing.T) {
			changeGeneration(t, few, i+1)
			changeGeneration(t, many, i+1)
			base := allocated(func() { tc.run(t, few) })
			built := many.judged.prepared.Load()
			got := allocated(func() { tc.run(t, many) })
			if built = many.judged.prepared.Load() - built; built > 2 {
				t.Errorf("%s of %d bundles built the trust policy %d times; want at most 2 (the catalog's staleness, the judge of floors)", tc.name, bundles, built)
			}
			per := (max(got, base) - base) / (bundles * keys)
			t.Logf("%d bundles: %d bytes with 2 keys trusted, %d with %d more: %d per bundle and key", bundles, base, got, keys, per)
			if per > tc.limit {
				t.Fatalf("%s allocated %d bytes per installed bundle and trusted key (%d bundles, %d keys); want at most %d: the trust policy is built, or its did:keys encoded, per bundle",
					tc.name, per, bundles, keys, tc.limit)
			}
		})
	}
}

// BenchmarkListingOfManyBundlesUnderManyKeys is the first listing after
// a change of a store of 1,000 bundles with 1,000 keys trusted, and the
// catalog with a resolve of each bundle (SCALE-24).
func BenchmarkListingOfManyBundlesUnderManyKeys(b *testing.B) {
	s := linesStore(b, 1000, 1000)
	for i, tc := range listingCosts {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				b.StopTimer()
				n++
				changeGeneration(b, s, 1000*i+n)
				b.StartTimer()
				tc.run(b, s)
			}
		})
	}
}

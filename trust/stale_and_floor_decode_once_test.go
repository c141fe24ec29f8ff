package trust_test

import (
	"bytes"
	"crypto/ed25519"
	"fmt"
	"math/rand/v2"
	"runtime/debug"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/capability"
	"github.com/ampbundle/ampbundle/internal/testalloc"
	"github.com/ampbundle/ampbundle/trust"
)

// installedOfArtifacts is an installed bundle id, version 1, of one
// capability and n one-word artifacts (its signed manifest about 120 n
// bytes), signed by key.
func installedOfArtifacts(t testing.TB, id string, n int, key ed25519.PrivateKey) trust.Installed {
	t.Helper()
	d := &bundle.Draft{BundleID: id, Version: 1, CreatedAt: now.Add(-48 * time.Hour)}
	for j := range n {
		d.Artifacts = append(d.Artifacts, bundle.BytesSource(fmt.Sprintf("blobs/%05d.bin", j), "application/octet-stream",
			[]byte{byte(j), byte(j >> 8), byte(j >> 16)}))
	}
	in, out := "capabilities/"+id+".op/1.0.0/input.schema.json", "capabilities/"+id+".op/1.0.0/output.schema.json"
	d.Artifacts = append(d.Artifacts, bundle.BytesSource(in, bundle.MediaTypeSchema, []byte(`{"type":"object"}`)),
		bundle.BytesSource(out, bundle.MediaTypeSchema, []byte(`{"type":"object","properties":{}}`)))
	v, _ := capability.ParseVersion("1.0.0")
	d.Capabilities = []capability.Descriptor{{Name: id + ".op", Version: v,
		InputSchema: capability.SchemaRef{ArtifactKey: in}, OutputSchema: capability.SchemaRef{ArtifactKey: out}}}
	var buf bytes.Buffer
	if _, err := bundle.Write(&buf, d, []ed25519.PrivateKey{key}, bundle.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	info, err := bundle.Inspect(&buf, 0)
	if err != nil {
		t.Fatal(err)
	}
	return trust.Installed{BundleID: id, Version: 1, Signed: info.SignedManifest, Signers: []string{did(key)}}
}

// TestJudgingAnInstalledBundleForStalenessAndFloorDecodesItsManifestOnce
//
// Attack: a store asks both why an installed bundle is stale and what
// its floor is when a freshness policy is set or a heartbeat is kept and
// the newest time its keys signed reaches its expiry (every catalog
// rebuild, listing and cold artifact read of it). trust.Prepared.Stale
// and trust.Prepared.InstalledFloor each decoded its signed manifest,
// about ten times the manifest's bytes allocated per decode: both
// answers cost two decodes.
//
// Defence (docs/SPEC-DECISIONS.md TRUST-34): trust.Prepared.StaleAndFloor
// gives both from one decode. For manifests of 500 and 2,000 artifacts,
// the bytes StaleAndFloor allocates beyond one decode of the manifest,
// per byte more of manifest (the least of three runs of each): before
// (Stale, then InstalledFloor), about one more decode; now at most half
// of one.
func TestJudgingAnInstalledBundleForStalenessAndFloorDecodesItsManifestOnce(t *testing.T) {
	if testalloc.Race {
		t.Skip("allocation bounds are not judged under the race detector")
	}
	key := seedKey(71)
	const id = "org.example.heavy"
	var judged, decoded [2]uint64
	for i, n := range []int{500, 2000} {
		st := (&trust.State{}).Clone()
		st.Keys["k"] = trust.Key{Name: "k", Key: pub(key), Scopes: []string{"org.example"}}
		st.KeyFloors[did(key)] = now.Unix()
		st.Freshness["*"] = trust.Freshness{MaxVersions: trust.NoVersionBound, MaxAgeSeconds: 365 * 86400}
		st.Heartbeats[id] = trust.Heartbeat{Version: 1, CreatedAt: now.Add(-47 * time.Hour).Format(time.RFC3339), Signers: []string{did(key)}}
		in := installedOfArtifacts(t, id, n, key)
		st.Installed[id] = in
		p := trust.Prepare(st)
		if why, floor := p.StaleAndFloor(id); why != "" || floor != now.Unix() {
			t.Fatalf("%d artifacts: stale %q, floor %d; want not stale, floor %d", n, why, floor, now.Unix())
		}
		gc := debug.SetGCPercent(-1)
		judged[i] = testalloc.Least(func() { p.StaleAndFloor(id) })
		decoded[i] = testalloc.Least(func() { in.Manifest() })
		debug.SetGCPercent(gc)
	}
	decode := int64(decoded[1]) - int64(decoded[0])
	extra := int64(judged[1]) - int64(judged[0]) - decode
	t.Logf("1,500 artifacts more: StaleAndFloor allocates %d bytes more, one decode of the manifest %d: %d beyond it",
		int64(judged[1])-int64(judged[0]), decode, extra)
	if extra > decode/2 {
		t.Fatalf("judging staleness and floor allocates %d bytes beyond one decode of the manifest (%d bytes), more than half a decode: the manifest is decoded again",
			extra, decode)
	}
}

// TestStaleAndFloorAnswerAsStaleAndInstalledFloorDo: the one decode must
// not change a verdict (docs/SPEC-DECISIONS.md TRUST-34). Over random
// states (keys with overlapping and revoked scopes, thresholds,
// heartbeats kept with and without signers, unreadable heartbeats,
// freshness bounds, key floors and pinned floors, records that do not
// decode, lines not installed), StaleAndFloor answers as Stale and
// InstalledFloor of the same Prepared, and as trust.Stale and
// trust.InstalledFloor of the State.
func TestStaleAndFloorAnswerAsStaleAndInstalledFloorDo(t *testing.T) {
	keys := []ed25519.PrivateKey{seedKey(81), seedKey(82), seedKey(83)}
	lines := []trust.Installed{
		installedAs(t, "org.example.translate", keys[0]),
		installedAs(t, "org.example.pair", keys[0], keys[1]),
		installedAs(t, "com.acme.translate", keys[2]),
	}
	ids := []string{"org.example.translate", "org.example.pair", "com.acme.translate", "org.example.absent"}
	scopes := []string{"*", "org", "org.example", "org.example.translate", "com.acme"}
	r := rand.New(rand.NewPCG(34, 1))
	base := now.Add(-time.Hour).Unix()
	seen := map[string]int{}
	for n := range 400 {
		st := (&trust.State{}).Clone()
		for i, k := range keys {
			st.Keys[fmt.Sprintf("k%d", i)] = trust.Key{Name: fmt.Sprintf("k%d", i), Key: pub(k), Scopes: []string{scopes[r.IntN(len(scopes))]}}
			if r.IntN(5) == 0 {
				st.RevokedKeys[did(k)] = trust.Revocation{Scopes: []string{scopes[r.IntN(len(scopes))]}}
			}
			if r.IntN(3) != 0 {
				st.KeyFloors[did(k)] = base + r.Int64N(90*86400) - 10*86400
			}
		}
		if r.IntN(3) == 0 {
			st.Thresholds[scopes[r.IntN(len(scopes))]] = uint64(1 + r.IntN(2))
		}
		if r.IntN(5) != 0 {
			f := trust.Freshness{MaxVersions: trust.NoVersionBound}
			if r.IntN(2) == 0 {
				f.MaxVersions = uint64(r.IntN(3))
			}
			if r.IntN(2) == 0 {
				f.MaxAgeSeconds = uint64(1+r.IntN(60)) * 86400
			}
			st.Freshness[scopes[r.IntN(len(scopes))]] = f
		}
		for _, in := range lines {
			switch r.IntN(7) {
			case 0:
				continue // not installed
			case 1:
				in.Signed = nil // a record that did not decode
			case 2:
				in.Signed = []byte("not a signed manifest")
			}
			if r.IntN(3) == 0 {
				in.Floor = base + r.Int64N(90*86400)
			}
			st.Installed[in.BundleID] = in
		}
		for _, id := range ids {
			if r.IntN(2) == 0 {
				continue
			}
			hb := trust.Heartbeat{Version: uint64(r.IntN(6)), CreatedAt: time.Unix(base+r.Int64N(60*86400), 0).UTC().Format(time.RFC3339),
				Unreadable: r.IntN(10) == 0}
			for _, k := range keys {
				if r.IntN(2) == 0 {
					hb.Signers = append(hb.Signers, did(k))
				}
			}
			st.Heartbeats[id] = hb
		}
		p := trust.Prepare(st)
		for _, id := range ids {
			why, floor := p.StaleAndFloor(id)
			if want := p.Stale(id); why != want {
				t.Fatalf("state %d, %s: StaleAndFloor says stale %q, Stale %q", n, id, why, want)
			}
			if want := trust.Stale(st, id); why != want {
				t.Fatalf("state %d, %s: StaleAndFloor says stale %q, trust.Stale %q", n, id, why, want)
			}
			if want := p.InstalledFloor(id); floor != want {
				t.Fatalf("state %d, %s: StaleAndFloor says floor %d, InstalledFloor %d", n, id, floor, want)
			}
			if want := trust.InstalledFloor(st, id); floor != want {
				t.Fatalf("state %d, %s: StaleAndFloor says floor %d, trust.InstalledFloor %d", n, id, floor, want)
			}
			seen[kindOf(why)]++
			if floor > 0 {
				seen["a floor"]++
			}
		}
	}
	for _, why := range []string{"not stale", "versions behind", "last vouched", "heartbeat unreadable", "record unreadable", "a floor"} {
		if seen[why] == 0 {
			t.Errorf("no state gave %q: %v", why, seen)
		}
	}
	t.Logf("answers: %v", seen)
}

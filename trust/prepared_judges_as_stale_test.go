package trust_test

import (
	"crypto/ed25519"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/trust"
)

// TestPreparedPolicyJudgesEveryBundleAsStaleInstalledFloorAndVouchesDo: a store
// judges each of its installed bundles against one trust state built
// once (trust.Prepare), not once per bundle (docs/SPEC-DECISIONS.md
// SCALE-24); trust.Stale and trust.InstalledFloor are the prepared
// judgements, prepared for one call. A prepared Vouches or floor that
// differed from trust.Vouches or trust.Floor under the state's policy
// would serve a bundle they fail closed, or refuse one they serve. Over
// random states (keys with overlapping, revoked and duplicated scopes, a
// small-order key, thresholds, heartbeats kept with and without signers
// and pinned thresholds, freshness bounds, key floors and pinned floors,
// unreadable records), the prepared answers equal theirs for every line,
// installed or not, and every kind of Stale answer is met.
func TestPreparedPolicyJudgesEveryBundleAsStaleInstalledFloorAndVouchesDo(t *testing.T) {
	keys := []ed25519.PrivateKey{seedKey(61), seedKey(62), seedKey(63), seedKey(64)}
	lines := []trust.Installed{
		installedAs(t, "org.example.translate", keys[0]),
		installedAs(t, "org.example.pair", keys[0], keys[1]),
		installedAs(t, "com.acme.translate", keys[2], keys[3]),
	}
	digests := map[string][]byte{}
	for _, in := range lines {
		_, m, ok := in.Manifest()
		if !ok {
			t.Fatalf("%s does not decode", in.BundleID)
		}
		digests[in.BundleID] = trust.LineDigest(m)
	}
	ids := []string{"org.example.translate", "org.example.pair", "com.acme.translate", "org.example.absent"}
	scopes := []string{"*", "org", "org.example", "org.example.translate", "com.acme", "org.example.pair"}
	r := rand.New(rand.NewPCG(24, 1))
	base := now.Add(-time.Hour).Unix()
	pick := func(from []string) []string {
		var out []string
		for _, s := range from {
			if r.IntN(3) == 0 {
				out = append(out, s)
			}
		}
		return out
	}
	var dids []string
	for _, k := range keys {
		dids = append(dids, did(k))
	}
	seen := map[string]int{}
	for n := range 700 {
		st := (&trust.State{}).Clone()
		for i, k := range keys {
			st.Keys[fmt.Sprintf("k%d", i)] = trust.Key{Name: fmt.Sprintf("k%d", i), Key: pub(k), Scopes: append(pick(scopes), scopes[r.IntN(len(scopes))])}
			if r.IntN(4) == 0 {
				st.RevokedKeys[dids[i]] = trust.Revocation{Scopes: pick(scopes)}
			}
			if r.IntN(3) != 0 {
				st.KeyFloors[dids[i]] = base + r.Int64N(90*86400) - 10*86400
			}
		}
		if r.IntN(6) == 0 { // one key under two names
			st.Keys["zz"] = trust.Key{Name: "zz", Key: pub(keys[r.IntN(len(keys))]), Scopes: []string{scopes[r.IntN(len(scopes))]}}
		}
		if r.IntN(8) == 0 { // trusted for nothing (Policy leaves it out)
			st.Keys["small"] = trust.Key{Name: "small", Key: identityKey(), Scopes: []string{"*"}}
		}
		for _, sc := range pick(scopes) {
			st.Thresholds[sc] = uint64(1 + r.IntN(3))
		}
		for _, sc := range pick(scopes) {
			f := trust.Freshness{MaxVersions: trust.NoVersionBound}
			if r.IntN(2) == 0 {
				f.MaxVersions = uint64(r.IntN(3))
			}
			if r.IntN(2) == 0 {
				f.MaxAgeSeconds = uint64(1+r.IntN(60)) * 86400
			}
			st.Freshness[sc] = f
		}
		for _, in := range lines {
			switch r.IntN(8) {
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
			if r.IntN(3) == 0 {
				continue
			}
			hb := trust.Heartbeat{Version: uint64(r.IntN(6)), CreatedAt: time.Unix(base+r.Int64N(60*86400), 0).UTC().Format(time.RFC3339),
				Signers: pick(dids), Unreadable: r.IntN(12) == 0}
			if r.IntN(2) == 0 {
				hb.Threshold = uint64(r.IntN(3))
				hb.LineSHA256 = digests[ids[r.IntN(len(ids))]] // its line's, or another's
			}
			st.Heartbeats[id] = hb
		}
		p := trust.Prepare(st)
		for _, id := range ids {
			if hb, ok := st.Heartbeats[id]; ok {
				if line, err := st.LineOf(id); err == nil {
					if got, want := p.Vouches(&hb, line), trust.Vouches(st.Policy(), &hb, line); got != want {
						t.Fatalf("state %d, %s: prepared Vouches %v, Vouches %v", n, id, got, want)
					} else if want {
						seen["vouches"]++
					} else {
						seen["does not vouch"]++
					}
				}
			}
			seen[kindOf(p.Stale(id))]++
			want := int64(0)
			if in, ok := st.Installed[id]; ok {
				if _, m, ok := in.Manifest(); ok {
					want = max(trust.Floor(st, st.Policy(), m), in.Floor)
				}
			}
			if got := p.InstalledFloor(id); got != want {
				t.Fatalf("state %d, %s: prepared InstalledFloor %d, Floor under the policy (and the pin) %d", n, id, got, want)
			} else if want > 0 {
				seen["a floor"]++
			}
		}
	}
	// Each answer was met.
	for _, why := range []string{"not stale", "versions behind", "last vouched", "heartbeat unreadable", "record unreadable", "a floor", "vouches", "does not vouch"} {
		if seen[why] == 0 {
			t.Errorf("no state gave %q: %v", why, seen)
		}
	}
	t.Logf("answers: %v", seen)
}

// kindOf names the kind of a Stale answer.
func kindOf(why string) string {
	for _, k := range []struct{ part, kind string }{
		{"versions behind", "versions behind"}, {"last vouched", "last vouched"},
		{"heartbeat is unreadable", "heartbeat unreadable"}, {"is unreadable", "record unreadable"},
	} {
		if strings.Contains(why, k.part) {
			return k.kind
		}
	}
	if why == "" {
		return "not stale"
	}
	return why
}

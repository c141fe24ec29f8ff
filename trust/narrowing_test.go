package trust_test

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/bundlebuild"
	"github.com/ampbundle/ampbundle/trust"
)

// Threat: an act that only narrows trust (a threshold raised, a key
// retired, revoked or removed) makes something less restrictive — serves
// a bundle a revoked key vouched for, unpins a stale line, lowers an
// expired bundle's floor, or lets an older policy file trust a removed
// key again (docs/SPEC-DECISIONS.md TRUST-12, TRUST-7).

// scopedRotation is a trust statement of scope (rotation, in
// trust_test.go, is of org.example only).
func scopedRotation(t testing.TB, scope string, seq uint64, threshold uint64, retire []string, signers ...ed25519.PrivateKey) []byte {
	t.Helper()
	r := &bundle.Rotation{Format: bundle.RotationFormat, Scope: scope, Sequence: seq, Prev: make([]byte, 32), CreatedAt: "2026-11-22T12:00:00Z",
		Threshold: threshold, Retire: retire}
	r.Normalize()
	data, err := bundle.SignRotation(r, signers)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// installedAs is the translate sample built with its bundle id changed to
// id (its capability namespace stays org.example.translate) and signed by
// keys, as a store hands it to trust, with keys as the signers that
// counted.
func installedAs(t testing.TB, id string, keys ...ed25519.PrivateKey) trust.Installed {
	t.Helper()
	d, err := bundlebuild.LoadSource(filepath.Join(samples, "translate"), bundlebuild.SourceOptions{CreatedAt: now.Add(-time.Hour), Signer: pub(keys[0])})
	if err != nil {
		t.Fatal(err)
	}
	d.BundleID = id
	var buf bytes.Buffer
	if _, err := bundle.Write(&buf, d, keys, bundle.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	info, err := bundle.Inspect(&buf, 0)
	if err != nil {
		t.Fatal(err)
	}
	var signers []string
	for _, k := range keys {
		signers = append(signers, did(k))
	}
	return trust.Installed{BundleID: id, Version: info.Manifest.Version, Signed: info.SignedManifest, Signers: signers}
}

// TestRevocationReachesARetiredKeysBundleSpanningTwoScopes: key k is
// trusted for com.acme and org.example and alone vouches for bundle
// com.acme.translate, whose namespace is org.example.translate. Whatever
// the order in which one scope's chain retires k and the scopes' owners
// revoke it (§22 advises "revoke the key after retiring it"), a
// revocation by the owner of either scope fails the bundle closed: k
// counted for it at import and its authority over that scope's name is
// what let the bundle in. Before, a revocation reached a bundle by key
// only when all its names lay under the statement's scope, so after a
// retirement neither owner could ever fail it closed. A statement of a
// third scope, or naming a key that never counted for the bundle, still
// reaches nothing of it.
func TestRevocationReachesARetiredKeysBundleSpanningTwoScopes(t *testing.T) {
	owner, acme, k, other := seedKey(0x31), seedKey(0x32), seedKey(0x33), seedKey(0x34)
	type step struct {
		rotate bool // a retirement of k by the scope's chain, else a revocation of k
		scope  string
	}
	tests := []struct {
		name   string
		steps  []step
		closed bool
	}{
		{"retired by com.acme, revoked by org.example", []step{{true, "com.acme"}, {false, "org.example"}}, true},
		{"retired by com.acme, revoked by com.acme", []step{{true, "com.acme"}, {false, "com.acme"}}, true},
		{"retired by org.example, revoked by com.acme", []step{{true, "org.example"}, {false, "com.acme"}}, true},
		{"retired by org.example, revoked by org.example", []step{{true, "org.example"}, {false, "org.example"}}, true},
		{"retired by both, revoked by com.acme", []step{{true, "com.acme"}, {true, "org.example"}, {false, "com.acme"}}, true},
		{"revoked by org.example, then retired by com.acme", []step{{false, "org.example"}, {true, "com.acme"}}, true},
		{"revoked by com.acme, then retired by org.example", []step{{false, "com.acme"}, {true, "org.example"}}, true},
		{"retired by com.acme only", []step{{true, "com.acme"}}, false},
		{"retired by com.acme, revoked by net.other", []step{{true, "com.acme"}, {false, "net.other"}}, false},
	}
	signer := map[string]ed25519.PrivateKey{"org.example": owner, "com.acme": acme, "net.other": other}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := (&trust.State{}).Clone()
			for name, kk := range map[string]struct {
				key    ed25519.PrivateKey
				scopes []string
			}{"owner": {owner, []string{"org.example"}}, "acme": {acme, []string{"com.acme"}}, "other": {other, []string{"net.other"}},
				"k": {k, []string{"com.acme", "org.example"}}} {
				st.Keys[name] = trust.Key{Name: name, Key: pub(kk.key), Scopes: kk.scopes, AddedAt: "2026-11-01T00:00:00Z"}
			}
			in := installedAs(t, "com.acme.translate", k)
			st.Installed[in.BundleID], st.Highwater[in.BundleID] = in, in.Version
			for _, s := range tt.steps {
				var err error
				if s.rotate {
					st, _, err = trust.ApplyRotation(st, scopedRotation(t, s.scope, 1, 1, []string{did(k)}, signer[s.scope]), now)
				} else {
					st, _, err = trust.ApplyRevocation(st, revocation(t, s.scope, []string{did(k)}, signer[s.scope]), now)
				}
				if err != nil {
					t.Fatalf("%+v: %v", s, err)
				}
			}
			if closed := st.Installed[in.BundleID].Revoked != ""; closed != tt.closed {
				t.Fatalf("com.acme.translate, vouched for by k alone (namespace org.example.translate), fails closed = %v, want %v: "+
					"a key revoked by the owner of one of its bundle's scopes must not keep it served, and a third scope reaches nothing of it", closed, tt.closed)
			}
		})
	}
	// A key that signed the bundle but never counted for it (not among
	// its signers at import) is not reached through the spanning rule.
	st := (&trust.State{}).Clone()
	st.Keys["owner"] = trust.Key{Name: "owner", Key: pub(owner), Scopes: []string{"org.example"}}
	st.Keys["acme"] = trust.Key{Name: "acme", Key: pub(acme), Scopes: []string{"com.acme", "org.example"}}
	in := installedAs(t, "com.acme.translate", acme, k)
	in.Signers = []string{did(acme)}
	st.Installed[in.BundleID] = in
	next, e, err := trust.ApplyRevocation(st, revocation(t, "org.example", []string{did(k)}, owner), now)
	if err != nil || next.Installed[in.BundleID].Revoked != "" {
		t.Fatalf("a revocation of a key that did not count for a bundle spanning two scopes failed it closed: %+v %v", e, err)
	}
}

// threeOfficers trusts three keys for org.example with a threshold of 2
// and has the translate sample installed.
func threeOfficers(t testing.TB) (*trust.State, [3]ed25519.PrivateKey) {
	t.Helper()
	keys := [3]ed25519.PrivateKey{seedKey(0x41), seedKey(0x42), seedKey(0x43)}
	st := state(t, map[string][]string{"e1": {"org.example"}, "e2": {"org.example"}, "e3": {"org.example"}},
		map[string]ed25519.PrivateKey{"e1": keys[0], "e2": keys[1], "e3": keys[2]})
	st.Thresholds["org.example"] = 2
	return st, keys
}

// raises are the ways an operator or a scope's owners raise org.example's
// threshold from 2 to 3.
func raises(k [3]ed25519.PrivateKey) []struct {
	name  string
	raise func(t *testing.T, st *trust.State) (*trust.State, error)
} {
	return []struct {
		name  string
		raise func(t *testing.T, st *trust.State) (*trust.State, error)
	}{
		{"policy file", func(_ *testing.T, st *trust.State) (*trust.State, error) {
			next, _, err := trust.ApplyPolicy(st, &trust.PolicyFile{Thresholds: map[string]uint64{"org.example": 3}}, now)
			return next, err
		}},
		{"trust threshold", func(_ *testing.T, st *trust.State) (*trust.State, error) {
			next, _, err := trust.SetThreshold(st, "org.example", 3)
			return next, err
		}},
		{"trust add with a threshold", func(_ *testing.T, st *trust.State) (*trust.State, error) {
			next, _, err := trust.AddKey(st, "e4", pub(seedKey(0x44)), []string{"org.example"}, 3, now)
			return next, err
		}},
		{"trust statement", func(t *testing.T, st *trust.State) (*trust.State, error) {
			next, _, err := trust.ApplyRotation(st, scopedRotation(t, "org.example", 1, 3, nil, k[0], k[1]), now)
			return next, err
		}},
	}
}

// TestThresholdRaiseNeverUnpinsAStaleLine: a line is stale (a heartbeat
// signed by two of three officers, threshold 2, says it is 5 versions
// ahead; the bound is 1). The attacker, who withholds new versions (the
// freeze staleness exists to catch), has the threshold raised to 3 — a
// policy file that looks like hardening, or any other raise. The kept
// heartbeat met the threshold in force when it was applied and the line
// still has the names it was judged for, so it still counts: the frozen
// bundle (installed under the old threshold, and not re-judged) stays
// stale. Before, the heartbeat was re-judged against the new threshold,
// counted for nothing, and the frozen bundle was served again.
func TestThresholdRaiseNeverUnpinsAStaleLine(t *testing.T) {
	_, k := threeOfficers(t)
	for _, r := range raises(k) {
		t.Run(r.name, func(t *testing.T) {
			st, _ := threeOfficers(t)
			st.Freshness["org.example"] = trust.Freshness{MaxVersions: 1}
			const line = "org.example.translate"
			st, _, err := trust.ApplyHeartbeat(st, heartbeat(t, st.Installed[line].Version+5, "2026-11-20T00:00:00Z", k[0], k[1]), now)
			if err != nil {
				t.Fatal(err)
			}
			if trust.Stale(st, line) == "" {
				t.Fatal("precondition: the line is not stale")
			}
			next, err := r.raise(t, st)
			if err != nil {
				t.Fatal(err)
			}
			if trust.Stale(next, line) == "" {
				t.Fatal("raising a threshold made a stale (frozen) bundle fresh again: the heartbeat its own keys signed " +
					"was judged against the new threshold while the bundle itself is not; a stricter policy served what the looser one refused")
			}
			// Only today's threshold holds back a heartbeat signed earlier
			// (TRUST-9): one signed by all three, as the raised threshold
			// wants, of the kept version replaces the kept one though
			// signed before it. One of a lower version is held back: the
			// kept one still vouches under the threshold it met, and a raise
			// plus an older statement must not take the line back.
			if _, _, err := trust.ApplyHeartbeat(next, heartbeat(t, st.Installed[line].Version+5, "2026-11-19T00:00:00Z", k[0], k[1], k[2]), now); err != nil {
				t.Fatalf("after the raise, a heartbeat meeting today's threshold was held back by one below it: %v", err)
			}
			if _, _, err := trust.ApplyHeartbeat(next, heartbeat(t, st.Installed[line].Version+1, "2026-11-19T00:00:00Z", k[0], k[1], k[2]), now); !errors.Is(err, trust.ErrHeartbeatOlder) {
				t.Fatalf("after the raise, a heartbeat of a lower version than the kept one took the line back: want heartbeat_replayed, got %v", err)
			}
		})
	}
}

// TestNarrowingTrustNeverLowersAnExpiredBundlesFloor: two of three
// officers (threshold 2) have signed a time after the bundle's
// expires_at, so its floor has passed its expiry and a clock set back
// cannot serve it (TRUST-5). Raising the threshold to 3 would make the
// floor the third-largest officer time — none — and removing or revoking
// one of the two officers the second-largest of the others': the floor
// dropped to 0 and, with the clock set back, the expired bundle was valid
// again. The floor it had is pinned instead.
func TestNarrowingTrustNeverLowersAnExpiredBundlesFloor(t *testing.T) {
	_, k := threeOfficers(t)
	acts := raises(k)
	acts = append(acts, []struct {
		name  string
		raise func(t *testing.T, st *trust.State) (*trust.State, error)
	}{
		{"trust rm of a signer, keep serving", func(_ *testing.T, st *trust.State) (*trust.State, error) {
			next, _, err := trust.RemoveKey(st, "e1", false)
			return next, err
		}},
		{"revocation of a signer", func(t *testing.T, st *trust.State) (*trust.State, error) {
			next, _, err := trust.ApplyRevocation(st, revocation(t, "org.example", []string{did(k[0])}, k[1], k[2]), now)
			return next, err
		}},
		{"retirement of a signer", func(t *testing.T, st *trust.State) (*trust.State, error) {
			next, _, err := trust.ApplyRotation(st, scopedRotation(t, "org.example", 1, 2, []string{did(k[0])}, k[1], k[2]), now)
			return next, err
		}},
	}...)
	for _, a := range acts {
		t.Run(a.name, func(t *testing.T) {
			st, _ := threeOfficers(t)
			const line = "org.example.translate"
			in := st.Installed[line]
			_, m, ok := in.Manifest()
			if !ok || m.ExpiresAt == nil {
				t.Fatal("the translate sample should expire")
			}
			late := m.ExpiresAt.Add(365 * 24 * time.Hour)
			st = trust.RaiseFloors(st, late, []string{did(k[0]), did(k[1])})
			before := trust.InstalledFloor(st, line)
			if before < m.ExpiresAt.Unix() {
				t.Fatalf("precondition: floor %d is before expiry %d", before, m.ExpiresAt.Unix())
			}
			next, err := a.raise(t, st)
			if err != nil {
				t.Fatal(err)
			}
			if f := trust.InstalledFloor(next, line); f < before {
				t.Fatalf("an act that only narrowed trust dropped the floor of an expired bundle from %d to %d (expiry %d): "+
					"with the clock set back, the expired bundle is served again", before, f, m.ExpiresAt.Unix())
			}
		})
	}
}

// TestStalePolicyFileCannotRetrustAKeyRemovedByTrustRm: the operator
// removes a compromised key with trust rm (TRUST-11: "it must no longer
// be relied on"). The attacker hands over an older copy of the site's
// policy file, which still lists the key: it is refused (invalid_policy)
// and changes nothing, as TRUST-10 refuses a key a trust statement
// retired. trust add, the explicit step, trusts it again, and the same
// file is then accepted.
func TestStalePolicyFileCannotRetrustAKeyRemovedByTrustRm(t *testing.T) {
	owner, stolen := seedKey(0x51), seedKey(0x52)
	st := state(t, map[string][]string{"owner": {"org.example"}, "stolen": {"org.example"}},
		map[string]ed25519.PrivateKey{"owner": owner, "stolen": stolen})
	st, e, err := trust.RemoveKey(st, "stolen", true)
	if err != nil || e.RemovedKeys[did(stolen)] != "stolen" {
		t.Fatalf("trust rm should record the key it removed: %+v %v", e, err)
	}
	old := &trust.PolicyFile{Keys: []trust.PolicyKey{
		{Name: "owner", Key: did(owner), Scopes: []string{"org.example"}},
		{Name: "stolen", Key: did(stolen), Scopes: []string{"org.example"}},
	}}
	if next, pe, err := trust.ApplyPolicy(st, old, now); !errors.Is(err, trust.ErrInvalidPolicy) {
		t.Fatalf("an older copy of the policy file trusted again a key the operator removed with trust rm (err %v, effects %+v, trusted %v)",
			err, pe, next != nil && next.Keys["stolen"].Key != nil)
	}
	st, e, err = trust.AddKey(st, "stolen", pub(stolen), []string{"org.example"}, 0, now)
	if err != nil || !slices.Equal(e.DeleteRemovedKeys, []string{did(stolen)}) {
		t.Fatalf("trust add should lift the removal: %+v %v", e, err)
	}
	if _, pe, err := trust.ApplyPolicy(st, old, now); err != nil || !slices.Equal(pe.Kept, []string{"owner", "stolen"}) {
		t.Fatalf("after trust add, the file should be kept as is: %+v %v", pe, err)
	}
}

// TestPolicyFileTrustsAKeyAStatementRetiredAndAddedAgain: a later
// statement of the retiring chain adding a key lifts the retirement for a
// policy file (TRUST-10), when no trust rm removed the key since.
func TestPolicyFileTrustsAKeyAStatementRetiredAndAddedAgain(t *testing.T) {
	pubKey, back := sampleKey(t, "example-publisher"), seedKey(5)
	st := state(t, map[string][]string{"pub": {"org.example"}}, map[string]ed25519.PrivateKey{"pub": pubKey})
	r1 := rotation(t, 1, nil, 1, nil, []string{did(back)}, pubKey)
	sum := sha256Of(r1)
	st.Chains["org.example"] = []trust.ChainEntry{{Seq: 1, Data: r1},
		{Seq: 2, Data: rotation(t, 2, sum, 1, []bundle.NamedKey{{Name: "back", Key: did(back)}}, nil, pubKey)}}
	p := &trust.PolicyFile{Keys: []trust.PolicyKey{{Name: "back", Key: did(back), Scopes: []string{"org.example"}}}}
	if _, e, err := trust.ApplyPolicy(st, p, now); err != nil || !slices.Equal(e.Added, []string{"back"}) {
		t.Fatalf("a key added again by a later statement of the chain was refused: %+v %v", e, err)
	}
}

// TestAddKeyRefusesAThresholdOutOfRange: trust.AddKey checks the
// threshold itself (not only the store's API): a negative one, or one
// above what a bundle can carry, is invalid_trust and changes nothing.
func TestAddKeyRefusesAThresholdOutOfRange(t *testing.T) {
	st := (&trust.State{}).Clone()
	for _, n := range []int{-1, bundle.MaxSignatures + 1} {
		if next, _, err := trust.AddKey(st, "k", pub(seedKey(0x61)), []string{"org.example"}, n, now); !errors.Is(err, trust.ErrInvalidTrust) || next != nil {
			t.Fatalf("threshold %d: %v", n, err)
		}
	}
}

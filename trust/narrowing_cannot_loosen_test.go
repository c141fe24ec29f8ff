package trust_test

import (
	"crypto/ed25519"
	"crypto/sha256"
	"errors"
	"testing"

	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/trust"
)

// Narrowing trust cannot be loosened through another door: another
// scope's trust statement does not lift the operator's trust rm, a policy
// key that cannot be read is refused, and a heartbeat kept from before a
// threshold raise does not hold back one that meets it
// (docs/SPEC-DECISIONS.md TRUST-9, TRUST-10, TRUST-12, TRUST-16).

// chainStatement is a trust statement of scope at seq chained to prev
// (nil: the first), adding add and retiring retire.
func chainStatement(t testing.TB, scope string, seq uint64, prev []byte, add []bundle.NamedKey, retire []string, signers ...ed25519.PrivateKey) []byte {
	t.Helper()
	if prev == nil {
		prev = make([]byte, 32)
	}
	r := &bundle.Rotation{Format: bundle.RotationFormat, Scope: scope, Sequence: seq, Prev: prev, CreatedAt: "2026-11-22T12:00:00Z",
		Threshold: 1, Add: add, Retire: retire}
	r.Normalize()
	data, err := bundle.SignRotation(r, signers)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestAnotherTenantsTrustStatementCannotLiftTheOperatorsTrustRm: the
// operator removed a compromised org.example key with trust rm, which
// records it so that an older policy file cannot trust it again
// (TRUST-12). The owner of an unrelated scope (net.other, another
// tenant of the same store) adds that key to its own chain and retires it
// in the next statement. ApplyRotation's add drops the store-wide removal
// record (delete(s.RemovedKeys, did)) although the statement speaks only
// for net.other, and the retirement is recorded for net.other only, so
// the older policy file then trusts the compromised key for org.example
// again: one tenant's owners undid the operator's trust rm of another
// tenant's key. Expected: a statement of scope S lifts a removal only for
// what it can speak for (the record kept, or narrowed to scopes outside
// S), and the old file stays invalid_policy.
func TestAnotherTenantsTrustStatementCannotLiftTheOperatorsTrustRm(t *testing.T) {
	owner, stolen, other := seedKey(0x71), seedKey(0x72), seedKey(0x73)
	st := state(t, map[string][]string{"owner": {"org.example"}, "stolen": {"org.example"}, "other": {"net.other"}},
		map[string]ed25519.PrivateKey{"owner": owner, "stolen": stolen, "other": other})
	st, _, err := trust.RemoveKey(st, "stolen", true)
	if err != nil {
		t.Fatal(err)
	}
	s1 := chainStatement(t, "net.other", 1, nil, []bundle.NamedKey{{Name: "borrowed", Key: did(stolen)}}, nil, other)
	st, _, err = trust.ApplyRotation(st, s1, now)
	if err != nil {
		t.Fatalf("net.other's statement adding a key for net.other: %v", err)
	}
	sum := sha256.Sum256(s1)
	st, _, err = trust.ApplyRotation(st, chainStatement(t, "net.other", 2, sum[:], nil, []string{did(stolen)}, other), now)
	if err != nil {
		t.Fatalf("net.other's statement retiring it again: %v", err)
	}
	old := &trust.PolicyFile{Keys: []trust.PolicyKey{
		{Name: "owner", Key: did(owner), Scopes: []string{"org.example"}},
		{Name: "stolen", Key: did(stolen), Scopes: []string{"org.example"}},
	}}
	next, _, err := trust.ApplyPolicy(st, old, now)
	if !errors.Is(err, trust.ErrInvalidPolicy) {
		trusted := next != nil && next.Keys["stolen"].Key != nil
		t.Fatalf("after another scope's owners added and retired the key in their own chain, an older policy file trusted the key the "+
			"operator removed with trust rm for org.example again (err %v, trusted again %v): a statement of net.other lifted a store-wide removal", err, trusted)
	}
}

// TestApplyPolicyRefusesAKeyItCannotReadInsteadOfTrustingAnEmptyKey: a
// key revoked for org.example must not become trusted for it through a
// policy file under another spelling (TSTATE-1: every way a key becomes
// trusted consults its revocation). policyKey ignores bundle.KeyFromKID's
// failure (pub, _ := ...) and looks the revocation up by the file's
// spelling: the revoked key spelt as a kid ("did:key:z...#z...") is not
// read, is not found revoked, and trust.ApplyPolicy accepts the file,
// trusting under "bad" a zero-length public key for org.example.
// resolver.ParseTrustPolicy refuses that spelling first, so the store is
// not reached today; but trust.ApplyPolicy is the exported decision and,
// like trust.AddKey (TRUST-14), should check its own input. Expected:
// invalid_policy (or key_revoked), nothing trusted.
func TestApplyPolicyRefusesAKeyItCannotReadInsteadOfTrustingAnEmptyKey(t *testing.T) {
	owner, bad := seedKey(0x74), seedKey(0x75)
	st := state(t, map[string][]string{"owner": {"org.example"}}, map[string]ed25519.PrivateKey{"owner": owner})
	st, _, err := trust.ApplyRevocation(st, revocation(t, "org.example", []string{did(bad)}, owner), now)
	if err != nil {
		t.Fatal(err)
	}
	d := did(bad)
	for _, spelling := range []string{d, d + "#" + d[len("did:key:"):], "not a key"} {
		file := &trust.PolicyFile{Keys: []trust.PolicyKey{{Name: "bad", Key: spelling, Scopes: []string{"org.example"}}}}
		next, _, err := trust.ApplyPolicy(st, file, now)
		if err == nil {
			t.Fatalf("trust.ApplyPolicy accepted a file whose key is spelt %q (the key revoked for org.example, or no key) and trusted %+v: "+
				"a key it cannot read is trusted as an empty key, and its revocation was looked up by the spelling", spelling, next.Keys["bad"])
		}
	}
}

// TestHeartbeatBelowTodaysThresholdCannotHoldBackOneThatMeetsIt: TRUST-9
// lets only a kept heartbeat that counts for the line hold a newer one
// back, so that one signed below the threshold cannot switch freshness
// off by being "newer" than every genuine one. e68474a judges a kept
// heartbeat against the threshold it met when applied (TRUST-12), which
// is right for keeping a line stale, but Vouches is also what decides
// heartbeat_replayed. One key x of org.example (threshold 1 then) signs a
// heartbeat saying the installed version is current, dated a month
// ahead. The owners, who no longer want one key to speak for the scope,
// raise the threshold to 2. Their genuine 2-of-3 heartbeat saying the
// line is 5 versions ahead is refused as older than x's, and the frozen
// bundle stays served; before e68474a the raise made x's heartbeat count
// for nothing and the genuine one was applied. Expected: the threshold
// met when applied keeps a line stale, but a heartbeat below today's
// threshold never holds back one that meets it.
func TestHeartbeatBelowTodaysThresholdCannotHoldBackOneThatMeetsIt(t *testing.T) {
	k1, k2, x := seedKey(0x76), seedKey(0x77), seedKey(0x78)
	st := state(t, map[string][]string{"k1": {"org.example"}, "k2": {"org.example"}, "x": {"org.example"}},
		map[string]ed25519.PrivateKey{"k1": k1, "k2": k2, "x": x})
	st.Freshness["org.example"] = trust.Freshness{MaxVersions: 1}
	const line = "org.example.translate"
	installed := st.Installed[line].Version
	st, _, err := trust.ApplyHeartbeat(st, heartbeat(t, installed, "2026-12-22T12:00:00Z", x), now)
	if err != nil {
		t.Fatal(err)
	}
	st, _, err = trust.SetThreshold(st, "org.example", 2)
	if err != nil {
		t.Fatal(err)
	}
	next, _, err := trust.ApplyHeartbeat(st, heartbeat(t, installed+5, "2026-11-23T12:00:00Z", k1, k2), now)
	if err != nil {
		t.Fatalf("after the threshold was raised to 2, the scope's 2-of-3 heartbeat was refused because of one signed by a single key "+
			"(%v): a heartbeat below today's threshold switched freshness off for the line", err)
	}
	if trust.Stale(next, line) == "" {
		t.Fatal("the genuine heartbeat was applied but the frozen line is not stale")
	}
}

package trust_test

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/keyfile"
	"github.com/ampbundle/ampbundle/trust"
)

// now is the injected clock of every test.
var now = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

var samples = filepath.Join("..", "testdata", "bundles")

// sampleKey reads a TEST-ONLY key of testdata/bundles/keys.
func sampleKey(t testing.TB, name string) ed25519.PrivateKey {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(samples, "keys", "TEST-ONLY-"+name+".key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	k, err := keyfile.ParsePrivate(data)
	if err != nil {
		t.Fatal(err)
	}
	return k.Ed25519
}

// seedKey is a key made from one byte, for the second signers a test needs.
func seedKey(b byte) ed25519.PrivateKey { return ed25519.NewKeyFromSeed(bytes.Repeat([]byte{b}, 32)) }

func pub(k ed25519.PrivateKey) ed25519.PublicKey { return k.Public().(ed25519.PublicKey) }

func did(k ed25519.PrivateKey) string { return amp.DIDKey(pub(k)) }

// translate is the installed sample org.example.translate (signed by the
// example publisher) as a store hands it to trust.
func translate(t testing.TB) trust.Installed {
	t.Helper()
	f, err := os.Open(filepath.Join(samples, "translate.ampb"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	in, err := bundle.Inspect(f, 0)
	if err != nil {
		t.Fatal(err)
	}
	return trust.Installed{BundleID: in.Manifest.BundleID, Version: in.Manifest.Version, Signed: in.SignedManifest}
}

// state trusts keys (name -> key) for scopes and has the translate sample
// installed.
func state(t testing.TB, scopes map[string][]string, keys map[string]ed25519.PrivateKey) *trust.State {
	t.Helper()
	st := (&trust.State{}).Clone()
	for name, k := range keys {
		st.Keys[name] = trust.Key{Name: name, Key: pub(k), Scopes: scopes[name], AddedAt: "2026-11-01T00:00:00Z"}
	}
	in := translate(t)
	st.Installed[in.BundleID] = in
	st.Highwater[in.BundleID] = in.Version
	return st
}

func revocation(t testing.TB, scope string, keys []string, signers ...ed25519.PrivateKey) []byte {
	t.Helper()
	r := &bundle.Revocation{Format: bundle.RevocationFormat, Scope: scope, CreatedAt: "2026-11-22T12:00:00Z", Keys: keys}
	r.Normalize()
	data, err := bundle.SignRevocation(r, signers)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func heartbeat(t testing.TB, version uint64, created string, signers ...ed25519.PrivateKey) []byte {
	t.Helper()
	data, err := bundle.SignHeartbeat(&bundle.Heartbeat{Format: bundle.HeartbeatFormat, BundleID: "org.example.translate", Version: version, CreatedAt: created}, signers)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func rotation(t testing.TB, seq uint64, prev []byte, threshold uint64, add []bundle.NamedKey, retire []string, signers ...ed25519.PrivateKey) []byte {
	t.Helper()
	if prev == nil {
		prev = make([]byte, 32)
	}
	r := &bundle.Rotation{Format: bundle.RotationFormat, Scope: "org.example", Sequence: seq, Prev: prev, CreatedAt: "2026-11-22T12:00:00Z",
		Threshold: threshold, Add: add, Retire: retire}
	r.Normalize()
	data, err := bundle.SignRotation(r, signers)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// snapshot returns a deep copy of st to compare it with after a call,
// made by reflection (deepCopy), not by the State.Clone it checks.
func snapshot(st *trust.State) *trust.State {
	return deepCopy(reflect.ValueOf(st)).Interface().(*trust.State)
}

// unchangedInput fails when a call changed the state it was given.
func unchangedInput(t *testing.T, before, after *trust.State) {
	t.Helper()
	if !reflect.DeepEqual(before, after) {
		t.Fatal("the call changed the state it was given: trust functions must return a new state")
	}
}

// TestRevokedPublisherKeyFailsItsBundleClosed: a revocation of the
// publisher's key by another key of its scope removes the key, records the
// revocation, fails the installed bundle it alone vouched for closed, and
// says so in its effects and audit event, leaving the input state as it
// was.
func TestRevokedPublisherKeyFailsItsBundleClosed(t *testing.T) {
	pubKey, other := sampleKey(t, "example-publisher"), seedKey(7)
	st := state(t, map[string][]string{"pub": {"org.example"}, "other": {"org.example"}}, map[string]ed25519.PrivateKey{"pub": pubKey, "other": other})
	before := snapshot(st)
	data := revocation(t, "org.example", []string{did(pubKey)}, other)
	next, e, err := trust.ApplyRevocation(st, data, now)
	if err != nil {
		t.Fatal(err)
	}
	unchangedInput(t, before, st)
	if _, ok := next.Keys["pub"]; ok || !slices.Equal(e.DeleteKeys, []string{"pub"}) || !slices.Equal(e.RemovedTrust, []string{"pub"}) {
		t.Fatalf("revoked key still trusted: keys %v, effects delete %v", next.Keys, e.DeleteKeys)
	}
	if got := e.FailedClosed; len(got) != 1 || next.Installed["org.example.translate"].Revoked == "" {
		t.Fatalf("failed closed %v, installed %+v", got, next.Installed["org.example.translate"].Revoked)
	}
	if r, ok := e.RevokeKeys[did(pubKey)]; !ok || !slices.Equal(r.Scopes, []string{"org.example"}) {
		t.Fatalf("revocation record %+v", e.RevokeKeys)
	}
	if !e.Changed || len(e.Audit) != 1 || e.Audit[0].Action != "revoke" || e.Audit[0].Verdict != "accepted" || !bytes.Equal(e.Statement, data) {
		t.Fatalf("effects %+v", e.Effects)
	}
	// Applied again: nothing new, audited as unchanged, no new generation.
	_, again, err := trust.ApplyRevocation(next, data, now)
	if err != nil || !again.Unchanged || again.Changed || again.Audit[0].Verdict != "unchanged" {
		t.Fatalf("again: %+v %v", again, err)
	}
}

// TestRevocationCannotReachBeyondItsScope: keys of org.example cannot
// revoke a key trusted for everything (revocation_out_of_scope), and
// untrusted signers cannot revoke anything: the state is left as it was.
func TestRevocationCannotReachBeyondItsScope(t *testing.T) {
	pubKey, other, stranger := sampleKey(t, "example-publisher"), seedKey(7), seedKey(9)
	st := state(t, map[string][]string{"pub": {"*"}, "other": {"org.example"}}, map[string]ed25519.PrivateKey{"pub": pubKey, "other": other})
	before := snapshot(st)
	for _, tt := range []struct {
		name   string
		signer ed25519.PrivateKey
		want   amp.ErrName
	}{
		{"broader key", other, trust.ErrRevocationScope},
		{"untrusted signer", stranger, bundle.ErrUntrustedKey},
	} {
		t.Run(tt.name, func(t *testing.T) {
			next, e, err := trust.ApplyRevocation(st, revocation(t, "org.example", []string{did(pubKey)}, tt.signer), now)
			if !errors.Is(err, tt.want) || next != nil || e != nil {
				t.Fatalf("got %v (next %v), want %s", err, next != nil, tt.want)
			}
			unchangedInput(t, before, st)
		})
	}
}

// TestTrustStatementsApplyOnlyInChainOrder: a trust statement after a
// missing one is rotation_gap, another statement of an applied number
// rotation_fork, the very statement again Unchanged with no effect; an
// applied one retires and adds keys and sets the threshold.
func TestTrustStatementsApplyOnlyInChainOrder(t *testing.T) {
	pubKey, second, third := sampleKey(t, "example-publisher"), seedKey(2), seedKey(3)
	st := state(t, map[string][]string{"pub": {"org.example"}}, map[string]ed25519.PrivateKey{"pub": pubKey})
	add := []bundle.NamedKey{{Name: "second", Key: did(second)}, {Name: "third", Key: did(third)}}
	first := rotation(t, 1, nil, 2, add, nil, pubKey)
	next, e, err := trust.ApplyRotation(st, first, now)
	if err != nil {
		t.Fatal(err)
	}
	if next.Thresholds["org.example"] != 2 || e.Thresholds["org.example"] != 2 || len(e.Keys) != 2 || e.Chain == nil || e.Chain.Seq != 1 {
		t.Fatalf("applied: thresholds %v, effects %+v", next.Thresholds, e.Effects)
	}
	if _, _, err := trust.ApplyRotation(next, rotation(t, 3, nil, 1, nil, nil, second, third), now); !errors.Is(err, trust.ErrRotationGap) {
		t.Fatalf("gap: %v", err)
	}
	if _, _, err := trust.ApplyRotation(next, rotation(t, 1, nil, 1, nil, nil, pubKey), now); !errors.Is(err, trust.ErrRotationFork) {
		t.Fatalf("fork: %v", err)
	}
	if _, again, err := trust.ApplyRotation(next, first, now); err != nil || !again.Unchanged || again.Changed || len(again.Audit) != 0 {
		t.Fatalf("again: %+v %v", again, err)
	}
	// The second retires the publisher: its bundle stays installed.
	sum := sha256Of(first)
	after, e2, err := trust.ApplyRotation(next, rotation(t, 2, sum, 2, nil, []string{did(pubKey)}, second, third), now)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := after.Keys["pub"]; ok || !slices.Equal(e2.Retired, []string{"pub"}) || len(e2.StillInstalled) != 1 {
		t.Fatalf("retire: keys %v, effects %+v", after.Keys, e2)
	}
}

// TestHeartbeatsNeverGoBack: an older heartbeat than the one kept is
// heartbeat_replayed, one too far above the known versions
// heartbeat_too_far, the same one again Unchanged; an accepted one raises
// its signers' time floors and makes the installed bundle stale under a
// freshness bound.
func TestHeartbeatsNeverGoBack(t *testing.T) {
	pubKey := sampleKey(t, "example-publisher")
	st := state(t, map[string][]string{"pub": {"org.example"}}, map[string]ed25519.PrivateKey{"pub": pubKey})
	st.Freshness["org.example"] = trust.Freshness{MaxVersions: 1, MaxAgeSeconds: 0}
	installed := st.Installed["org.example.translate"].Version
	hb := heartbeat(t, installed+3, "2026-11-20T00:00:00Z", pubKey)
	next, e, err := trust.ApplyHeartbeat(st, hb, now)
	if err != nil {
		t.Fatal(err)
	}
	if e.Stale == "" || trust.Stale(next, "org.example.translate") == "" {
		t.Fatal("a bundle three versions behind a bound of one is not stale")
	}
	if trust.Stale(st, "org.example.translate") != "" {
		t.Fatal("the input state became stale")
	}
	if next.KeyFloors[did(pubKey)] == 0 || e.KeyFloors[did(pubKey)] == 0 || e.TimeFloor == 0 {
		t.Fatalf("floors not raised: %+v", e.Effects)
	}
	for _, tt := range []struct {
		name string
		data []byte
		want amp.ErrName
	}{
		{"older version", heartbeat(t, installed+2, "2026-11-21T00:00:00Z", pubKey), trust.ErrHeartbeatOlder},
		{"earlier time", heartbeat(t, installed+3, "2026-11-19T00:00:00Z", pubKey), trust.ErrHeartbeatOlder},
		{"too far", heartbeat(t, installed+3+bundle.MaxHeartbeatJump+1, "2026-11-21T00:00:00Z", pubKey), trust.ErrHeartbeatTooFar},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, _, err := trust.ApplyHeartbeat(next, tt.data, now); !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want %s", err, tt.want)
			}
		})
	}
	if _, again, err := trust.ApplyHeartbeat(next, hb, now); err != nil || !again.Unchanged || again.Changed {
		t.Fatalf("again: %+v %v", again, err)
	}
}

// TestPolicyFileNeverLowersAThreshold: an older copy of a policy file
// cannot undo a raised threshold, nor trust again a key a trust statement
// retired.
func TestPolicyFileNeverLowersAThreshold(t *testing.T) {
	pubKey, second := sampleKey(t, "example-publisher"), seedKey(2)
	st := state(t, map[string][]string{"pub": {"org.example"}, "second": {"org.example"}}, map[string]ed25519.PrivateKey{"pub": pubKey, "second": second})
	st.Thresholds["org.example"] = 2
	lower := &trust.PolicyFile{Thresholds: map[string]uint64{"org.example": 1}}
	if _, _, err := trust.ApplyPolicy(st, lower, now); !errors.Is(err, trust.ErrInvalidPolicy) {
		t.Fatalf("lowered: %v", err)
	}
	st.Chains["org.example"] = []trust.ChainEntry{{Seq: 1, Data: rotation(t, 1, nil, 1, nil, []string{did(seedKey(5))}, pubKey)}}
	again := &trust.PolicyFile{Keys: []trust.PolicyKey{{Name: "back", Key: did(seedKey(5)), Scopes: []string{"org.example"}}}}
	if _, _, err := trust.ApplyPolicy(st, again, now); !errors.Is(err, trust.ErrInvalidPolicy) {
		t.Fatalf("retired key trusted again: %v", err)
	}
	same := &trust.PolicyFile{Keys: []trust.PolicyKey{{Name: "pub", Key: did(pubKey), Scopes: []string{"org.example"}}}}
	_, e, err := trust.ApplyPolicy(st, same, now)
	if err != nil || !e.Unchanged || e.Changed || !slices.Equal(e.Kept, []string{"pub"}) || !slices.Equal(e.NotInPolicy, []string{"second"}) {
		t.Fatalf("same policy: %+v %v", e, err)
	}
}

// TestFloorCountsOnlyEnoughKeysOfTheBundle: a bundle's time floor moves
// only with times signed by as many of its own keys as its threshold, so a
// key of another scope, or one key of two, cannot expire it.
func TestFloorCountsOnlyEnoughKeysOfTheBundle(t *testing.T) {
	pubKey, second, acme := sampleKey(t, "example-publisher"), seedKey(2), sampleKey(t, "acme-publisher")
	st := state(t, map[string][]string{"pub": {"org.example"}, "second": {"org.example"}, "acme": {"com.acme"}},
		map[string]ed25519.PrivateKey{"pub": pubKey, "second": second, "acme": acme})
	st.Thresholds["org.example"] = 2
	late := time.Date(2040, 1, 1, 0, 0, 0, 0, time.UTC)
	st = trust.RaiseFloors(st, late, []string{did(acme), did(pubKey)})
	if f := trust.InstalledFloor(st, "org.example.translate"); f >= late.Unix() {
		t.Fatalf("floor %d moved by one key of two and a key of another scope", f)
	}
	st = trust.RaiseFloors(st, late, []string{did(second)})
	if f := trust.InstalledFloor(st, "org.example.translate"); f != late.Unix() {
		t.Fatalf("floor %d, want %d once both keys signed", f, late.Unix())
	}
}

// TestTrustAddRefusesARevokedKey: a key revoked for a scope cannot be
// trusted for it again, and names and keys stay unique.
func TestTrustAddRefusesARevokedKey(t *testing.T) {
	pubKey, revoked := sampleKey(t, "example-publisher"), seedKey(4)
	st := state(t, map[string][]string{"pub": {"org.example"}}, map[string]ed25519.PrivateKey{"pub": pubKey})
	st.RevokedKeys[did(revoked)] = trust.Revocation{Scopes: []string{"org.example"}}
	for _, tt := range []struct {
		name, as string
		key      ed25519.PrivateKey
		want     amp.ErrName
	}{
		{"revoked key", "again", revoked, trust.ErrKeyRevoked},
		{"name taken", "pub", seedKey(6), trust.ErrTrustExists},
		{"key taken", "twice", pubKey, trust.ErrTrustExists},
		{"bad name", "a b", seedKey(6), trust.ErrInvalidTrust},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, _, err := trust.AddKey(st, tt.as, pub(tt.key), []string{"org.example.bank"}, 0, now); !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want %s", err, tt.want)
			}
		})
	}
	next, e, err := trust.AddKey(st, "bank", pub(seedKey(6)), []string{"org.example.bank."}, 2, now)
	if err != nil || next.Thresholds["org.example.bank"] != 2 || len(e.Audit) != 2 || e.Audit[1].Action != "trust_threshold" {
		t.Fatalf("add with threshold: %+v %v", e, err)
	}
}

// FuzzApplyStatement: no input panics a statement's Apply, and a refusal
// returns no state and no effects.
func FuzzApplyStatement(f *testing.F) {
	k := seedKey(1)
	f.Add(heartbeat(f, 2, "2026-11-20T00:00:00Z", k))
	f.Add(revocation(f, "org.example", []string{did(seedKey(2))}, k))
	f.Add(rotation(f, 1, nil, 1, nil, nil, k))
	st := (&trust.State{}).Clone()
	st.Keys["k"] = trust.Key{Name: "k", Key: pub(k), Scopes: []string{"org.example"}}
	f.Fuzz(func(t *testing.T, data []byte) {
		if next, e, err := trust.ApplyRevocation(st, data, now); err != nil && (next != nil || e != nil) {
			t.Fatal("refused revocation returned a state")
		}
		if next, e, err := trust.ApplyRotation(st, data, now); err != nil && (next != nil || e != nil) {
			t.Fatal("refused rotation returned a state")
		}
		if next, e, err := trust.ApplyHeartbeat(st, data, now); err != nil && (next != nil || e != nil) {
			t.Fatal("refused heartbeat returned a state")
		}
	})
}

func sha256Of(b []byte) []byte {
	s := sha256.Sum256(b)
	return s[:]
}

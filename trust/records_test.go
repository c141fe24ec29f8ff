package trust_test

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/trust"
)

// records is a store's Records held in memory: revoked versions and the
// DID documents of installed bundles, and what a function asked of them.
type records struct {
	versions  map[bundle.BundleVersion]trust.Revocation
	keys      map[string]trust.Revocation
	keysAsked []string
	dids      map[string][][2]string
	didsErr   error
	asked     []bundle.BundleVersion
	didsAsked []string
}

func (r *records) RevokedVersion(v bundle.BundleVersion) (trust.Revocation, bool) {
	r.asked = append(r.asked, v)
	rev, ok := r.versions[v]
	return rev, ok
}

func (r *records) RevokedKey(did string) (trust.Revocation, bool) {
	r.keysAsked = append(r.keysAsked, did)
	rev, ok := r.keys[did]
	return rev, ok
}

func (r *records) BundleDIDs(id string) ([][2]string, error) {
	r.didsAsked = append(r.didsAsked, id)
	return r.dids[id], r.didsErr
}

func versionRevocation(t testing.TB, scope string, versions []bundle.BundleVersion, signers ...ed25519.PrivateKey) []byte {
	t.Helper()
	r := &bundle.Revocation{Format: bundle.RevocationFormat, Scope: scope, CreatedAt: "2026-11-22T12:00:00Z", Bundles: versions}
	r.Normalize()
	data, err := bundle.SignRevocation(r, signers)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestMassVersionRevocationsCostARevocationNothing: a publisher trusted
// for one scope may have revoked thousands of its own versions; a
// revocation asks the store's Records only for the versions it names (so
// its cost does not grow with the records kept), writes only those not
// yet revoked, and is Unchanged when every one already was.
func TestMassVersionRevocationsCostARevocationNothing(t *testing.T) {
	pubKey := sampleKey(t, "example-publisher")
	st := state(t, map[string][]string{"pub": {"org.example"}}, map[string]ed25519.PrivateKey{"pub": pubKey})
	rec := &records{versions: map[bundle.BundleVersion]trust.Revocation{}}
	for i := range 10000 {
		rec.versions[bundle.BundleVersion{BundleID: "org.example.mass", Version: uint64(i + 1)}] = trust.Revocation{At: "2026-11-01T00:00:00Z"}
	}
	st.Records = rec
	before := snapshot(st)
	kept, fresh := bundle.BundleVersion{BundleID: "org.example.mass", Version: 5}, bundle.BundleVersion{BundleID: "org.example.mass", Version: 10001}
	next, e, err := trust.ApplyRevocation(st, versionRevocation(t, "org.example", []bundle.BundleVersion{kept, fresh}, pubKey), now)
	if err != nil {
		t.Fatal(err)
	}
	unchangedInput(t, before, st)
	slices.SortFunc(rec.asked, func(a, b bundle.BundleVersion) int { return int(a.Version) - int(b.Version) })
	if !reflect.DeepEqual(rec.asked, []bundle.BundleVersion{kept, fresh}) {
		t.Fatalf("the revocation asked Records for %d versions (%v), want the 2 it names", len(rec.asked), rec.asked)
	}
	if _, ok := e.RevokeVersions[fresh]; !ok || len(e.RevokeVersions) != 1 || e.Unchanged || !e.Changed {
		t.Fatalf("effects write %v (unchanged %v), want the new version alone", e.RevokeVersions, e.Unchanged)
	}
	if _, ok := next.RevokedVersions[fresh]; !ok {
		t.Fatal("the next state does not hold the version it revoked")
	}
	rec.asked = nil
	_, again, err := trust.ApplyRevocation(st, versionRevocation(t, "org.example", []bundle.BundleVersion{kept}, pubKey), now)
	if err != nil || !again.Unchanged || again.Changed || len(again.RevokeVersions) != 0 || len(rec.asked) != 1 {
		t.Fatalf("a revocation of a version the store keeps revoked: %+v %v (asked %d)", again, err, len(rec.asked))
	}
}

// TestRotationNeverReadsDIDRecords: a trust statement judges no installed
// bundle's DID documents, so DID records the store cannot read (one
// corrupt record) do not stop it, nor does a revocation that recounts no
// bundle.
func TestRotationNeverReadsDIDRecords(t *testing.T) {
	pubKey, other := sampleKey(t, "example-publisher"), seedKey(7)
	st := state(t, map[string][]string{"pub": {"org.example"}, "other": {"org.example"}}, map[string]ed25519.PrivateKey{"pub": pubKey, "other": other})
	rec := &records{didsErr: errors.New("a DID record does not decode")}
	st.Records = rec
	s1 := rotation(t, 1, nil, 1, []bundle.NamedKey{{Name: "b", Key: did(seedKey(9))}}, nil, pubKey)
	if _, e, err := trust.ApplyRotation(st, s1, now); err != nil || e.Unchanged {
		t.Fatalf("rotation with unreadable DID records: %+v %v", e, err)
	}
	if _, e, err := trust.ApplyRevocation(st, revocation(t, "org.example", []string{did(other)}, pubKey), now); err != nil || len(e.FailedClosed) != 0 {
		t.Fatalf("revocation of a key that signed nothing installed: %+v %v", e, err)
	}
	if len(rec.didsAsked) != 0 {
		t.Fatalf("DID documents of %v were read", rec.didsAsked)
	}
}

// TestReappliedRotationSharesNothingWithItsInput: a trust statement
// applied again is Unchanged, and the state it returns is not the one it
// was given: a caller writing into next cannot write into the loaded
// state.
func TestReappliedRotationSharesNothingWithItsInput(t *testing.T) {
	pubKey := sampleKey(t, "example-publisher")
	st := state(t, map[string][]string{"pub": {"org.example"}}, map[string]ed25519.PrivateKey{"pub": pubKey})
	s1 := rotation(t, 1, nil, 1, []bundle.NamedKey{{Name: "b", Key: did(seedKey(9))}}, nil, pubKey)
	st1, _, err := trust.ApplyRotation(st, s1, now)
	if err != nil {
		t.Fatal(err)
	}
	before := snapshot(st1)
	next, e, err := trust.ApplyRotation(st1, s1, now)
	if err != nil || !e.Unchanged {
		t.Fatalf("%+v %v", e, err)
	}
	next.Keys["intruder"] = trust.Key{Name: "intruder", Key: pub(seedKey(10)), Scopes: []string{"*"}}
	next.Keys["pub"].Scopes[0] = "*"
	next.Chains["org.example"][0].Data[0] ^= 0xff
	unchangedInput(t, before, st1)
}

// TestCloneSharesNoMemoryWithItsSource: a write into any slice or byte
// string of a clone's values (a key's scopes or bytes, a revocation's
// scopes, a heartbeat's signers, an applied statement, an installed
// manifest) leaves the source as it was, so a function that writes into
// next never writes into the state it was given.
func TestCloneSharesNoMemoryWithItsSource(t *testing.T) {
	pubKey := sampleKey(t, "example-publisher")
	k := did(pubKey)
	st := state(t, map[string][]string{"pub": {"org.example"}}, map[string]ed25519.PrivateKey{"pub": pubKey})
	st.RevokedKeys[k] = trust.Revocation{StatementSHA256: make([]byte, 32), Scopes: []string{"com.acme"}}
	st.RevokedVersions[bundle.BundleVersion{BundleID: "org.example.x", Version: 1}] = trust.Revocation{StatementSHA256: make([]byte, 32)}
	st.Heartbeats["org.example.translate"] = trust.Heartbeat{Version: 2, StatementSHA256: make([]byte, 32), Signers: []string{k}}
	st.HeartbeatKept["org.example.translate"] = make([]byte, 32)
	st.Chains["org.example"] = []trust.ChainEntry{{Seq: 1, Data: []byte{1, 2, 3}}}
	in := st.Installed["org.example.translate"]
	in.Signers = []string{k}
	st.Installed["org.example.translate"] = in
	for _, tt := range []struct {
		name  string
		write func(c *trust.State)
	}{
		{"key scopes", func(c *trust.State) { c.Keys["pub"].Scopes[0] = "*" }},
		{"key bytes", func(c *trust.State) { c.Keys["pub"].Key[0] ^= 0xff }},
		{"revocation scopes", func(c *trust.State) { c.RevokedKeys[k].Scopes[0] = "*" }},
		{"revocation hash", func(c *trust.State) { c.RevokedKeys[k].StatementSHA256[0] = 1 }},
		{"revoked version hash", func(c *trust.State) {
			c.RevokedVersions[bundle.BundleVersion{BundleID: "org.example.x", Version: 1}].StatementSHA256[0] = 1
		}},
		{"heartbeat signers", func(c *trust.State) { c.Heartbeats["org.example.translate"].Signers[0] = "did:key:z" }},
		{"heartbeat hash", func(c *trust.State) { c.Heartbeats["org.example.translate"].StatementSHA256[0] = 1 }},
		{"kept heartbeat", func(c *trust.State) { c.HeartbeatKept["org.example.translate"][0] = 1 }},
		{"chain entry", func(c *trust.State) { c.Chains["org.example"][0].Data[0] = 9 }},
		{"chain", func(c *trust.State) { c.Chains["org.example"][0].Seq = 9 }},
		{"installed manifest", func(c *trust.State) { c.Installed["org.example.translate"].Signed[0] ^= 0xff }},
		{"installed signers", func(c *trust.State) { c.Installed["org.example.translate"].Signers[0] = "did:key:z" }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before := snapshot(st)
			tt.write(st.Clone())
			unchangedInput(t, before, st)
		})
	}
	if c := st.Clone(); !reflect.DeepEqual(c, st) {
		t.Fatal("a clone differs from its source")
	}
}

// TestSnapshotIsDeep: the input-unchanged checks compare against a copy
// that shares nothing with the state (snapshot copies by reflection, not
// by the Clone under test), so they see a write into a slice.
func TestSnapshotIsDeep(t *testing.T) {
	pubKey := sampleKey(t, "example-publisher")
	st := state(t, map[string][]string{"pub": {"org.example"}}, map[string]ed25519.PrivateKey{"pub": pubKey})
	before := snapshot(st)
	st.Keys["pub"].Scopes[0] = "*" // what a buggy function could do
	if before.Keys["pub"].Scopes[0] == "*" || reflect.DeepEqual(before, st) {
		t.Fatal("snapshot shares Key.Scopes with the state: the input-unchanged checks cannot catch a write into a slice")
	}
}

// TestResetForgetsAnUnreadableHeartbeat: a kept heartbeat record that does
// not decode fails its line closed as stale until reset; reset forgets it
// (version 0, no file hash) instead of refusing it.
func TestResetForgetsAnUnreadableHeartbeat(t *testing.T) {
	pubKey := sampleKey(t, "example-publisher")
	st := state(t, map[string][]string{"pub": {"org.example"}}, map[string]ed25519.PrivateKey{"pub": pubKey})
	st.Freshness["org.example"] = trust.Freshness{MaxVersions: 1}
	st.Heartbeats["org.example.translate"] = trust.Heartbeat{Unreadable: true}
	st.HeartbeatKept["org.example.translate"] = make([]byte, 32)
	if trust.Stale(st, "org.example.translate") == "" {
		t.Fatal("a line with an unreadable heartbeat is not stale")
	}
	before := snapshot(st)
	next, e, v, err := trust.ResetHeartbeat(st, "org.example.translate")
	if err != nil || v != 0 {
		t.Fatalf("reset of an unreadable heartbeat: version %d, %v", v, err)
	}
	unchangedInput(t, before, st)
	if !slices.Equal(e.DeleteHeartbeats, []string{"org.example.translate"}) || !e.Changed || len(e.Audit) != 1 || e.Audit[0].FileSHA256 != nil {
		t.Fatalf("effects %+v", e)
	}
	if why := trust.Stale(next, "org.example.translate"); why != "" {
		t.Fatalf("still stale after reset: %s", why)
	}
	if _, _, _, err := trust.ResetHeartbeat(next, "org.example.translate"); !errors.Is(err, trust.ErrNoHeartbeat) {
		t.Fatalf("second reset: %v", err)
	}
}

// deepCopy copies v sharing no map, slice or pointer with it (interfaces,
// such as a State's Records, are kept: a read-only view).
func deepCopy(v reflect.Value) reflect.Value {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return v
		}
		c := reflect.New(v.Elem().Type())
		c.Elem().Set(deepCopy(v.Elem()))
		return c
	case reflect.Map:
		if v.IsNil() {
			return v
		}
		c := reflect.MakeMapWithSize(v.Type(), v.Len())
		for it := v.MapRange(); it.Next(); {
			c.SetMapIndex(deepCopy(it.Key()), deepCopy(it.Value()))
		}
		return c
	case reflect.Slice:
		if v.IsNil() {
			return v
		}
		c := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		for i := range v.Len() {
			c.Index(i).Set(deepCopy(v.Index(i)))
		}
		return c
	case reflect.Struct:
		c := reflect.New(v.Type()).Elem()
		for i := range v.NumField() {
			c.Field(i).Set(deepCopy(v.Field(i)))
		}
		return c
	case reflect.Array:
		c := reflect.New(v.Type()).Elem()
		for i := range v.Len() {
			c.Index(i).Set(deepCopy(v.Index(i)))
		}
		return c
	case reflect.Bool, reflect.Int, reflect.Int64, reflect.Uint8, reflect.Uint64, reflect.String, reflect.Interface:
		return v
	}
	panic(fmt.Sprintf("deepCopy: %s", v.Kind()))
}

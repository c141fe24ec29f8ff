package resolver

import (
	"crypto/ed25519"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/capability"
)

func heartbeat(t *testing.T, id string, version uint64, created time.Time, signers ...ed25519.PrivateKey) []byte {
	t.Helper()
	data, err := bundle.SignHeartbeat(&bundle.Heartbeat{Format: bundle.HeartbeatFormat, BundleID: id, Version: version,
		CreatedAt: created.UTC().Format(time.RFC3339)}, signers)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func offered(t *testing.T, s *Store) bool {
	t.Helper()
	c, err := s.Catalog()
	if err != nil {
		t.Fatal(err)
	}
	id, _ := capability.ParseID(translateCap)
	_, ok := c.Lookup(id)
	return ok
}

// TestFreezeAttackFailsClosedAsStale: an operator keeps being handed
// version 1 while the publisher's heartbeats say the line is at version 4;
// with a freshness policy of one version, the installed bundle fails closed
// at its next use (5002 bundle_stale), leaves the catalog, is listed as
// stale, and the heartbeat is audited. Importing a fresh version heals it.
func TestFreezeAttackFailsClosedAsStale(t *testing.T) {
	s := newStore(t)
	k := sampleKey(t, "example-publisher")
	mustImport(t, s, variant(t, 1, nil))
	ref := descriptorRef(t, s)
	// Without a policy a heartbeat is recorded and nothing fails.
	if _, err := s.ApplyHeartbeat(heartbeat(t, "org.example.translate", 2, testNow, k)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Resolve(ref); err != nil {
		t.Fatalf("no policy, yet: %v", err)
	}
	if err := s.SetFreshness("*", 1); err != nil {
		t.Fatal(err)
	}
	if e := lastAudit(t, s); e.Action != "trust_freshness" || e.Threshold != 1 || len(e.Scopes) != 1 || e.Scopes[0] != "*" {
		t.Fatalf("audit %+v", e)
	}
	if _, err := s.Resolve(ref); err != nil {
		t.Fatalf("one version behind is allowed: %v", err)
	}
	res, err := s.ApplyHeartbeat(heartbeat(t, "org.example.translate", 4, testNow.Add(time.Hour), k))
	if err != nil {
		t.Fatal(err)
	}
	if res.Stale == "" || res.Installed != 1 {
		t.Fatalf("result %+v", res)
	}
	if e := lastAudit(t, s); e.Action != "heartbeat" || e.Version != 4 || e.BundleID != "org.example.translate" || len(e.FileSHA256) != 32 {
		t.Fatalf("audit %+v", e)
	}
	_, err = s.Resolve(ref)
	expect5002(t, err, ErrBundleStale)
	if offered(t, s) {
		t.Fatal("a stale bundle's capability is still offered")
	}
	bs, _ := s.Bundles()
	if len(bs) != 1 || !strings.Contains(bs[0].Stale, "3 versions behind") {
		t.Fatalf("bundles %+v", bs)
	}
	// A more specific scope wins over "*".
	if err := s.SetFreshness("org.example.translate", 5); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Resolve(ref); err != nil {
		t.Fatalf("the bundle's own scope allows 5: %v", err)
	}
	if err := s.SetFreshness("org.example", 0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Resolve(ref); err != nil {
		t.Fatalf("the most specific scope wins: %v", err)
	}
	if err := s.SetFreshness("org.example.translate", 2); err != nil {
		t.Fatal(err)
	}
	_, err = s.Resolve(ref)
	expect5002(t, err, ErrBundleStale)
	mustImport(t, s, variant(t, 3, nil))
	if _, err := s.Resolve(descriptorRef(t, s)); err != nil || !offered(t, s) {
		t.Fatalf("a fresh version still fails: %v", err)
	}
}

// TestHeartbeatReplayOfOlderStatementRefused: a store never goes back: an
// older heartbeat (lower version, or earlier signed time) is refused
// (heartbeat_replayed), audited, and changes nothing else; the same one
// again is unchanged.
func TestHeartbeatReplayOfOlderStatementRefused(t *testing.T) {
	s := newStore(t)
	k := sampleKey(t, "example-publisher")
	mustImport(t, s, variant(t, 1, nil))
	if err := s.SetFreshness("*", 0); err != nil {
		t.Fatal(err)
	}
	newest := heartbeat(t, "org.example.translate", 3, testNow, k)
	if _, err := s.ApplyHeartbeat(newest); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		data []byte
	}{
		{"lower version, earlier time", heartbeat(t, "org.example.translate", 1, testNow.Add(-time.Hour), k)},
		{"lower version, later time", heartbeat(t, "org.example.translate", 1, testNow.Add(time.Hour), k)},
		{"same version, earlier time", heartbeat(t, "org.example.translate", 3, testNow.Add(-time.Second), k)},
		{"higher version, earlier time", heartbeat(t, "org.example.translate", 9, testNow.Add(-time.Second), k)},
	}
	for _, tt := range tests {
		before := dumpBesidesAudit(t, s)
		_, err := s.ApplyHeartbeat(tt.data)
		if !errors.Is(err, ErrHeartbeatOlder) {
			t.Fatalf("%s: got %v", tt.name, err)
		}
		if dumpBesidesAudit(t, s) != before {
			t.Fatalf("%s: a refused heartbeat changed the store", tt.name)
		}
		if e := lastAudit(t, s); e.Action != "import_refused" || e.Verdict != string(ErrHeartbeatOlder) {
			t.Fatalf("%s: audit %+v", tt.name, e)
		}
		_, err = s.Resolve(descriptorRef(t, s))
		expect5002(t, err, ErrBundleStale)
	}
	res, err := s.ApplyHeartbeat(newest)
	if err != nil || !res.Unchanged {
		t.Fatalf("%+v %v", res, err)
	}
}

// TestHeartbeatThresholdBypass: a heartbeat counts only when signed by the
// threshold of distinct keys trusted for its bundle id: one key, a
// key trusted for another scope, or too few keys are refused and change
// nothing.
func TestHeartbeatThresholdBypass(t *testing.T) {
	a, b := testKeyN(11), testKeyN(12)
	s := newStore(t)
	for i, k := range []ed25519.PrivateKey{a, b} {
		if err := s.TrustAdd([]string{"a", "b"}[i], pub(k), []string{"org.example"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.TrustSetThreshold("org.example", 2); err != nil {
		t.Fatal(err)
	}
	mustImport(t, s, cosigned(t, 1, a, b))
	if err := s.SetFreshness("*", 0); err != nil {
		t.Fatal(err)
	}
	acme := sampleKey(t, "acme-publisher")
	tests := []struct {
		name string
		data []byte
		want amp.ErrName
	}{
		{"below the threshold", heartbeat(t, "org.example.translate", 5, testNow, a), bundle.ErrThreshold},
		{"key trusted for another scope", heartbeat(t, "org.example.translate", 5, testNow, a, acme), bundle.ErrThreshold},
		{"only a key of another scope", heartbeat(t, "org.example.translate", 5, testNow, acme), bundle.ErrUntrustedNamespace},
		{"untrusted key", heartbeat(t, "org.example.translate", 5, testNow, testKeyN(99)), bundle.ErrUntrustedKey},
	}
	for _, tt := range tests {
		before := dumpBesidesAudit(t, s)
		_, err := s.ApplyHeartbeat(tt.data)
		if !errors.Is(err, tt.want) {
			t.Fatalf("%s: got %v, want %s", tt.name, err, tt.want)
		}
		if dumpBesidesAudit(t, s) != before {
			t.Fatalf("%s: a refused heartbeat changed the store", tt.name)
		}
	}
	if _, err := s.Resolve(descriptorRef(t, s)); err != nil {
		t.Fatalf("a refused heartbeat made the bundle stale: %v", err)
	}
	if _, err := s.ApplyHeartbeat(heartbeat(t, "org.example.translate", 5, testNow, a, b)); err != nil {
		t.Fatal(err)
	}
	_, err := s.Resolve(descriptorRef(t, s))
	expect5002(t, err, ErrBundleStale)
}

// TestWrongClockWithHeartbeats: staleness never reads the local clock, so a
// clock set back or forward neither hides nor invents it; a heartbeat's
// signed time raises the time floor, so with the clock set back an expired
// bundle stays expired, and an older version is refused whatever the clock.
func TestWrongClockWithHeartbeats(t *testing.T) {
	clock := testNow
	s, err := Open(filepath.Join(t.TempDir(), "store.db"), Options{Now: func() time.Time { return clock }, Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	k := sampleKey(t, "example-publisher")
	if err := s.TrustAdd("example", pub(k), []string{"org.example"}); err != nil {
		t.Fatal(err)
	}
	exp := testNow.Add(24 * time.Hour)
	mustImport(t, s, variant(t, 2, func(d *bundle.Draft) { d.ExpiresAt = &exp }))
	ref := descriptorRef(t, s)
	if err := s.SetFreshness("*", 1); err != nil {
		t.Fatal(err)
	}
	// Clock set back: the heartbeat's signed time (after the expiry) is
	// the floor, so 1970 does not un-expire the bundle.
	if _, err := s.ApplyHeartbeat(heartbeat(t, "org.example.translate", 3, testNow.Add(48*time.Hour), k)); err != nil {
		t.Fatal(err)
	}
	if !s.TimeFloor().Equal(testNow.Add(48 * time.Hour)) {
		t.Fatalf("time floor %v", s.TimeFloor())
	}
	for _, wrong := range []time.Time{time.Unix(0, 0), testNow, exp.Add(-time.Second)} {
		clock = wrong
		_, err = s.Resolve(ref)
		expect5002(t, err, ErrBundleExpired)
		_, err = importBytes(t, s, variant(t, 1, nil), ImportOptions{})
		expectName(t, err, ErrRollback)
	}
	// Both ways, a fresh-by-versions bundle is judged the same: a newer
	// heartbeat makes version 4 stale whether the clock is early or late.
	far := testNow.Add(100 * 24 * time.Hour)
	mustImportAt := func(at time.Time) {
		clock = at
		mustImport(t, s, variant(t, 4, func(d *bundle.Draft) { d.CreatedAt = testNow.Add(49 * time.Hour) }))
	}
	mustImportAt(testNow.Add(50 * time.Hour))
	ref = descriptorRef(t, s)
	for _, wrong := range []time.Time{time.Unix(0, 0), testNow.Add(50 * time.Hour), far} {
		clock = wrong
		if _, err := s.Resolve(ref); err != nil {
			t.Fatalf("clock %v: %v", wrong, err)
		}
	}
	clock = time.Unix(0, 0)
	if _, err := s.ApplyHeartbeat(heartbeat(t, "org.example.translate", 6, testNow.Add(60*time.Hour), k)); err != nil {
		t.Fatal(err)
	}
	for _, wrong := range []time.Time{time.Unix(0, 0), testNow.Add(61 * time.Hour), far} {
		clock = wrong
		_, err = s.Resolve(ref)
		expect5002(t, err, ErrBundleStale)
	}
}

// TestFreezeAttackByAgeWithWrongClock: with a bound in days, an installed
// version not vouched for as current within 30 days of the newest signed
// time the store has seen fails closed (5002 bundle_stale), whatever the
// local clock says (set back to 1970 or forward by a year); a heartbeat of
// its line naming no newer version vouches for it again, one naming a
// newer version does not (the installed bundle's own created_at counts).
func TestFreezeAttackByAgeWithWrongClock(t *testing.T) {
	clock := testNow
	s := newStore(t, func(o *Options) { o.Now = func() time.Time { return clock } })
	k := sampleKey(t, "example-publisher")
	mustImport(t, s, variant(t, 1, nil))
	ref := descriptorRef(t, s)
	day := 24 * time.Hour
	if err := s.SetFreshnessPolicy("org.example", nil, 30*day); err != nil {
		t.Fatal(err)
	}
	floorAt := func(at time.Time) {
		t.Helper()
		if _, err := s.ApplyHeartbeat(heartbeat(t, "org.example.other", 1, at, k)); err != nil && !errors.Is(err, ErrHeartbeatOlder) {
			t.Fatal(err)
		}
	}
	steps := []struct {
		name  string
		apply func()
		stale bool
	}{
		{"nothing newer seen", func() {}, false},
		{"the line vouched for at +10d", func() {
			if _, err := s.ApplyHeartbeat(heartbeat(t, "org.example.translate", 1, testNow.Add(10*day), k)); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"newest signed time +39d", func() { floorAt(testNow.Add(39 * day)) }, false},
		{"newest signed time +41d", func() { floorAt(testNow.Add(41 * day)) }, true},
		{"the line vouched for again at +42d", func() {
			if _, err := s.ApplyHeartbeat(heartbeat(t, "org.example.translate", 1, testNow.Add(42*day), k)); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"a newer version announced at +50d", func() {
			if _, err := s.ApplyHeartbeat(heartbeat(t, "org.example.translate", 2, testNow.Add(50*day), k)); err != nil {
				t.Fatal(err)
			}
		}, true}, // it no longer vouches: the age counts from version 1's own created_at
	}
	for _, st := range steps {
		st.apply()
		for _, wrong := range []time.Time{time.Unix(0, 0), testNow, testNow.Add(365 * day)} {
			clock = wrong
			_, err := s.Resolve(ref)
			if st.stale {
				expect5002(t, err, ErrBundleStale)
			} else if err != nil {
				t.Fatalf("%s, clock %v: %v", st.name, wrong, err)
			}
		}
		clock = testNow
	}
}

// TestKeptHeartbeatsAreServedByteForByte: the heartbeat kept for a line is
// listed with its exact bytes (a mirror serves them, another store
// verifies them again), the newer one replacing the older; a reset
// forgets the bytes too; bytes that are not the record's file (left by a
// build that did not keep them as it applied a newer heartbeat) are never
// served as it.
func TestKeptHeartbeatsAreServedByteForByte(t *testing.T) {
	s := newStore(t)
	k := sampleKey(t, "example-publisher")
	mustImport(t, s, variant(t, 1, nil))
	if hs, err := s.Heartbeats(); err != nil || len(hs) != 0 {
		t.Fatalf("no heartbeat yet: %v %v", hs, err)
	}
	older := heartbeat(t, "org.example.translate", 2, testNow, k)
	newer := heartbeat(t, "org.example.translate", 3, testNow.Add(time.Hour), k)
	for _, data := range [][]byte{older, newer} {
		if _, err := s.ApplyHeartbeat(data); err != nil {
			t.Fatal(err)
		}
	}
	hs, err := s.Heartbeats()
	if err != nil || len(hs) != 1 {
		t.Fatalf("kept: %v %v", hs, err)
	}
	h := hs[0]
	if h.BundleID != "org.example.translate" || h.Version != 3 || string(h.Data) != string(newer) ||
		string(h.SHA256) != string(sha256sum(newer)) || h.CreatedAt != testNow.Add(time.Hour).UTC().Format(time.RFC3339) {
		t.Fatalf("kept heartbeat %+v", h)
	}
	// Bytes of another heartbeat under the line's key are not served.
	if err := s.db.Update(func(tx *bolt.Tx) error {
		return bucket(tx, bStatements).Put(heartbeatDataKey(h.BundleID), older)
	}); err != nil {
		t.Fatal(err)
	}
	if hs, _ := s.Heartbeats(); len(hs) != 1 || hs[0].Data != nil || hs[0].Version != 3 {
		t.Fatalf("bytes that are not the kept heartbeat's: %+v", hs)
	}
	if _, err := s.ResetHeartbeat(h.BundleID); err != nil {
		t.Fatal(err)
	}
	if hs, _ := s.Heartbeats(); len(hs) != 0 {
		t.Fatalf("after a reset: %+v", hs)
	}
	if err := s.db.View(func(tx *bolt.Tx) error {
		if bucket(tx, bStatements).Get(heartbeatDataKey(h.BundleID)) != nil {
			t.Error("a reset left the heartbeat's bytes")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// TestKeptHeartbeatHoldsBackOnlyWhileItCounts: a kept heartbeat holds back
// (a sync need not offer it to the store) only a heartbeat the store would
// refuse as older or leave unchanged, and only while it counts: once its
// signer is no longer trusted, any valid heartbeat replaces it, so a sync
// must offer it (threat: a heartbeat of a revoked key freezing the line's
// genuine heartbeats at every synced host).
func TestKeptHeartbeatHoldsBackOnlyWhileItCounts(t *testing.T) {
	s := newStore(t)
	k := sampleKey(t, "example-publisher")
	mustImport(t, s, variant(t, 1, nil))
	if _, err := s.ApplyHeartbeat(heartbeat(t, "org.example.translate", 3, testNow, k)); err != nil {
		t.Fatal(err)
	}
	hs, err := s.Heartbeats()
	if err != nil || len(hs) != 1 || !hs[0].Counts {
		t.Fatalf("kept: %+v %v", hs, err)
	}
	h, at := hs[0], testNow.UTC().Format(time.RFC3339)
	later := testNow.Add(time.Hour).UTC().Format(time.RFC3339)
	earlier := testNow.Add(-time.Hour).UTC().Format(time.RFC3339)
	for _, c := range []struct {
		version uint64
		created string
		want    bool
	}{{2, later, true}, {4, earlier, true}, {3, at, true}, {3, later, false}, {4, at, false}} {
		if got := h.HoldsBack(c.version, c.created); got != c.want {
			t.Errorf("HoldsBack(%d, %s) = %v, want %v", c.version, c.created, got, c.want)
		}
	}
	if err := s.TrustRemove("example"); err != nil {
		t.Fatal(err)
	}
	if hs, _ := s.Heartbeats(); len(hs) != 1 || hs[0].Counts || hs[0].HoldsBack(2, earlier) {
		t.Fatalf("a heartbeat whose signer is no longer trusted still holds back: %+v", hs)
	}
}

// TestHeartbeatAppliedAgainKeepsBytesAnOlderBuildDidNot: a heartbeat
// applied by a build that kept no bytes is served once it is applied
// again (unchanged), without waiting for a newer one; the generation
// changes, so that a mirror takes a new snapshot.
func TestHeartbeatAppliedAgainKeepsBytesAnOlderBuildDidNot(t *testing.T) {
	s := newStore(t)
	k := sampleKey(t, "example-publisher")
	mustImport(t, s, variant(t, 1, nil))
	hb := heartbeat(t, "org.example.translate", 2, testNow, k)
	if _, err := s.ApplyHeartbeat(hb); err != nil {
		t.Fatal(err)
	}
	// As an older build leaves it: the record, no bytes.
	if err := s.db.Update(func(tx *bolt.Tx) error {
		return bucket(tx, bStatements).Delete(heartbeatDataKey("org.example.translate"))
	}); err != nil {
		t.Fatal(err)
	}
	if hs, _ := s.Heartbeats(); len(hs) != 1 || hs[0].Data != nil {
		t.Fatalf("without its bytes: %+v", hs)
	}
	gen := s.Generation()
	if res, err := s.ApplyHeartbeat(hb); err != nil || !res.Unchanged {
		t.Fatalf("applied again: %+v %v", res, err)
	}
	if hs, _ := s.Heartbeats(); len(hs) != 1 || string(hs[0].Data) != string(hb) || s.Generation() == gen {
		t.Fatalf("applied again: %+v, generation %d -> %d", hs, gen, s.Generation())
	}
}

// TestHeartbeatAppliedAgainReplacesAnOlderOnesBytes: bytes of an older
// heartbeat left under the line (by a build that applied a newer one
// without keeping its bytes) are replaced when the kept heartbeat is
// applied again; a different file with the kept one's version and time
// (other signatures) never takes its place.
func TestHeartbeatAppliedAgainReplacesAnOlderOnesBytes(t *testing.T) {
	s := newStore(t)
	k := sampleKey(t, "example-publisher")
	mustImport(t, s, variant(t, 1, nil))
	h2 := heartbeat(t, "org.example.translate", 2, testNow, k)
	h3 := heartbeat(t, "org.example.translate", 3, testNow.Add(time.Hour), k)
	for _, h := range [][]byte{h2, h3} {
		if _, err := s.ApplyHeartbeat(h); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.db.Update(func(tx *bolt.Tx) error {
		return bucket(tx, bStatements).Put(heartbeatDataKey("org.example.translate"), h2)
	}); err != nil {
		t.Fatal(err)
	}
	// The same version and time, signed by another key too: another file.
	other := ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize))
	twin := heartbeat(t, "org.example.translate", 3, testNow.Add(time.Hour), k, other)
	if res, err := s.ApplyHeartbeat(twin); err != nil || !res.Unchanged {
		t.Fatalf("a twin of the kept heartbeat: %+v %v", res, err)
	}
	if hs, _ := s.Heartbeats(); len(hs) != 1 || hs[0].Data != nil {
		t.Fatalf("a twin's bytes were kept as the heartbeat's: %+v", hs)
	}
	if _, err := s.ApplyHeartbeat(h3); err != nil {
		t.Fatal(err)
	}
	if hs, _ := s.Heartbeats(); len(hs) != 1 || string(hs[0].Data) != string(h3) {
		t.Fatalf("the kept heartbeat applied again: %+v", hs)
	}
}

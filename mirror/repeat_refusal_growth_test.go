package mirror

// Threat: a sync runs from a timer every few minutes for years, and every
// file the store refuses is an import_refused entry of its audit log,
// which is chained and never trimmed. A mirror that lists, on every run,
// genuine files the store is bound to refuse (old versions of a bundle
// the operator removed, expired or revoked versions, statements out of
// order, a heartbeat the store no longer trusts) grows the store by one
// entry per file per run without end, needing no key of its own; each
// run also downloads and verifies every such file again. The bar: a run
// with the same index as the one before adds nothing to the store.

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/resolver"
)

// repeatMirror is a hostile mirror with no key of its own: it serves a
// genuine capabilities document (base, a real mirror of an empty store)
// and an index listing the genuine files it holds, each served byte for
// byte; fetches counts the bundle and statement files it served.
type repeatMirror struct {
	base    http.Handler
	ix      Index
	files   map[string][]byte
	fetches atomic.Int32
}

func newRepeatMirror(t *testing.T) *repeatMirror {
	t.Helper()
	m, _ := startMirror(t, newStore(t), nil)
	return &repeatMirror{base: m, ix: Index{Format: IndexFormat, Generation: 7, Bundles: []IndexEntry{}, Capabilities: []IndexCap{},
		Statements: []IndexStatement{}, Heartbeats: []IndexHeartbeat{}}, files: map[string][]byte{}}
}

// bundle lists the signed bundle file data.
func (m *repeatMirror) bundle(t *testing.T, data []byte) {
	t.Helper()
	in, err := bundle.Inspect(bytes.NewReader(data), 0)
	if err != nil {
		t.Fatal(err)
	}
	href := BundlesPrefix + in.Manifest.BundleID
	exp := ""
	if in.Manifest.ExpiresAt != nil {
		exp = in.Manifest.ExpiresAt.UTC().Format(time.RFC3339)
	}
	m.ix.Bundles = append(m.ix.Bundles, IndexEntry{BundleID: in.Manifest.BundleID, Version: in.Manifest.Version, ExpiresAt: exp,
		Size: int64(len(data)), SHA256: sum(data), Href: href})
	m.files[href] = data
}

// statement lists the signed trust or revocation statement data.
func (m *repeatMirror) statement(data []byte) {
	href := StatementsPrefix + sum(data)
	m.ix.Statements = append(m.ix.Statements, IndexStatement{ContentType: bundle.ContentType(data), Size: int64(len(data)), SHA256: sum(data), Href: href})
	m.files[href] = data
}

// heartbeat lists the signed heartbeat statement data.
func (m *repeatMirror) heartbeat(t *testing.T, data []byte) {
	t.Helper()
	hb, _, err := bundle.ParseHeartbeat(data)
	if err != nil {
		t.Fatal(err)
	}
	href := StatementsPrefix + sum(data)
	m.ix.Heartbeats = append(m.ix.Heartbeats, IndexHeartbeat{BundleID: hb.BundleID, Version: hb.Version, CreatedAt: hb.CreatedAt,
		Size: int64(len(data)), SHA256: sum(data), Href: href})
	m.files[href] = data
}

func (m *repeatMirror) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == IndexPath {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(m.ix)
		return
	}
	if data, ok := m.files[r.URL.Path]; ok {
		m.fetches.Add(1)
		w.Header().Set("Content-Length", strconv.Itoa(len(data)))
		w.Write(data)
		return
	}
	m.base.ServeHTTP(w, r)
}

// repeatCounting serves h, counting the bundle and statement files served.
type repeatCounting struct {
	h       http.Handler
	fetches atomic.Int32
}

func (c *repeatCounting) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, BundlesPrefix) || strings.HasPrefix(r.URL.Path, StatementsPrefix) {
		c.fetches.Add(1)
	}
	c.h.ServeHTTP(w, r)
}

// repeatRun is what one sync run left in the store: the audit entries it
// added (their verdicts, and their size as JSON: a lower bound of what
// the store keeps), whether it moved the generation, the store file's
// growth, and the files it downloaded.
type repeatRun struct {
	entries    int
	verdicts   map[string]int
	auditBytes int
	genMoved   bool
	fileGrowth int64
	fetches    int32
}

func (r repeatRun) String() string {
	return fmt.Sprintf("+%d audit entries (%v, >=%d bytes), generation moved %v, store file +%d bytes, %d files downloaded",
		r.entries, r.verdicts, r.auditBytes, r.genMoved, r.fileGrowth, r.fetches)
}

// repeatSync runs n syncs of s from url and returns what each left.
func repeatSync(t *testing.T, s *resolver.Store, url string, n int, fetches *atomic.Int32) []repeatRun {
	t.Helper()
	var out []repeatRun
	for range n {
		a0, _ := s.Audit()
		g0 := s.Generation()
		st0, _ := os.Stat(s.Path())
		f0 := fetches.Load()
		if _, err := syncOnce(t, s, url, nil); err != nil {
			t.Fatal(err)
		}
		a1, err := s.Audit()
		if err != nil {
			t.Fatal(err)
		}
		st1, _ := os.Stat(s.Path())
		run := repeatRun{entries: len(a1) - len(a0), genMoved: s.Generation() != g0, fileGrowth: st1.Size() - st0.Size(), fetches: fetches.Load() - f0}
		run.verdicts = map[string]int{}
		for _, e := range a1[len(a0):] {
			run.verdicts[e.Action+"/"+e.Verdict]++
			b, _ := json.Marshal(e)
			run.auditBytes += len(b)
		}
		out = append(out, run)
	}
	return out
}

// steadyState fails t unless every run after the first added nothing:
// no audit entry, no generation change, nothing downloaded.
func steadyState(t *testing.T, runs []repeatRun, what string) {
	t.Helper()
	for i, r := range runs[1:] {
		if r.entries != 0 || r.genMoved || r.fetches != 0 {
			t.Errorf("%s: run %d with the same index as run 1: %s; first run: %s (want nothing written and nothing downloaded again: "+
				"a timer sync every few minutes grows the chained, never-trimmed audit log without bound)", what, i+2, r, runs[0])
		}
	}
}

// TestRemovedBundleStillListedAddsNothingOnRepeatRuns: the operator
// removed org.example.echo (version 2, the highest it imported); any
// mirror that still serves it, an honest station included, lists version
// 2. Sync compares the offer only with the installed bundles, so it
// downloads the file, verifies its signature (it is genuine, so no cap
// applies) and offers it to the store, which refuses it (not newer than
// the highest imported) and audits the refusal: one entry every run,
// forever, for every removed bundle. Should: the high-water mark of a
// removed line refuses the offer before any download (older_offered, as
// for an installed one), and a refusal identical to one already audited
// at the same store generation is not audited again.
func TestRemovedBundleStillListedAddsNothingOnRepeatRuns(t *testing.T) {
	m, _ := startMirror(t, newStore(t, testBundle(t, 1), testBundle(t, 2)), nil)
	c := &repeatCounting{h: m}
	ts := httptest.NewServer(c)
	defer ts.Close()
	s := agentStore(t, testBundle(t, 1), testBundle(t, 2))
	if _, err := s.Remove("org.example.echo"); err != nil {
		t.Fatal(err)
	}
	steadyState(t, repeatSync(t, s, ts.URL, 3, &c.fetches), "a removed bundle still served")
}

// TestExpiredBundleStillListedAddsNothingOnRepeatRuns: a hostile mirror lists a
// genuine bundle that expired (an honest mirror stops listing it at its
// expiry; this one does not, and sync ignores the index's expires_at).
// Its signature verifies, so it is offered to the store on every run,
// refused as expired, and audited each time. Should: an offer whose
// expiry has passed is not downloaded (the index says expires_at; the
// file must say the same), and a repeated identical refusal is not
// audited again.
func TestExpiredBundleStillListedAddsNothingOnRepeatRuns(t *testing.T) {
	hm := newRepeatMirror(t)
	hm.bundle(t, expiringEchoBundle(t, testNow.Add(-time.Hour)))
	ts := httptest.NewServer(hm)
	defer ts.Close()
	s := agentStore(t)
	steadyState(t, repeatSync(t, s, ts.URL, 3, &hm.fetches), "an expired bundle")
}

// TestRevokedBundleVersionStillListedAddsNothingOnRepeatRuns: the store
// applied a revocation of org.example.echo@2; a mirror that never got it
// (or a hostile one that drops it from its index) lists genuine version
// 2. Newer than the installed 1 and signed by a trusted key, it is
// downloaded and offered on every run, refused as revoked and audited
// each time. Should: a version the store has revoked is refused before
// any download, and a repeated identical refusal is not audited again.
func TestRevokedBundleVersionStillListedAddsNothingOnRepeatRuns(t *testing.T) {
	hm := newRepeatMirror(t)
	hm.bundle(t, testBundle(t, 2))
	ts := httptest.NewServer(hm)
	defer ts.Close()
	s := agentStore(t, testBundle(t, 1))
	if _, err := s.ApplyRevocation(signedRevocation(t, nil, []bundle.BundleVersion{{BundleID: "org.example.echo", Version: 2}}, testKey)); err != nil {
		t.Fatal(err)
	}
	steadyState(t, repeatSync(t, s, ts.URL, 3, &hm.fetches), "a revoked bundle version")
}

// TestOtherScopeBundlesAddNothingOnRepeatRuns: genuine bundles of
// another scope (signed by a key the host trusts only for com.vendor,
// under org.example) are refused by the store; MaxStoreRefusals bounds
// them to 64 a run, but not across runs: the same three files are
// downloaded, offered, refused and audited on every run. Should: a file
// refused for its signatures is remembered (by its SHA-256, a bounded
// record) and not offered again while the store's trust is unchanged.
func TestOtherScopeBundlesAddNothingOnRepeatRuns(t *testing.T) {
	hm, ts, s := otherScopeBundles(t)
	steadyState(t, repeatSync(t, s, ts.URL, 3, &hm.fetches), "bundles of another scope")
}

// TestOutOfOrderStatementsAddNothingOnRepeatRunsNorPastTheCap: the
// trust chain of org.example is genuine (statements 1 to 71, each signed
// by the trusted publisher key); a hostile mirror lists statements 2 to
// 71 and never 1. Each is signed as the store requires (vouched), so
// MaxStoreRefusals does not apply: all 70 are downloaded, offered,
// refused (rotation_gap) and audited on every run, 70 entries a run (a
// chain of 10,000, the index limit, would be 10,000 a run). Should: a
// statement refused for its place in the chain is not offered again
// until the chain it needs moved (rotation_gap names the sequence the
// store wants), and vouched refusals count toward a per-run bound too.
func TestOutOfOrderStatementsAddNothingOnRepeatRunsNorPastTheCap(t *testing.T) {
	hm := newRepeatMirror(t)
	var prev []byte
	for seq := uint64(1); seq <= MaxStoreRefusals+7; seq++ {
		add := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{byte(seq + 30)}, ed25519.SeedSize))
		st := rotationAfter(t, prev, seq, "k"+strconv.FormatUint(seq, 10), add, testKey)
		if seq > 1 {
			hm.statement(st)
		}
		prev = st
	}
	ts := httptest.NewServer(hm)
	defer ts.Close()
	s := agentStore(t, testBundle(t, 1))
	runs := repeatSync(t, s, ts.URL, 2, &hm.fetches)
	if runs[0].entries > MaxStoreRefusals {
		t.Errorf("first run: %s: more than MaxStoreRefusals (%d) refusals audited in one run, because statements a trusted key signed are not counted",
			runs[0], MaxStoreRefusals)
	}
	steadyState(t, runs, "statements out of order")
}

// TestHeartbeatNoLongerTrustedAddsNothingOnRepeatRuns: an honest
// station keeps the heartbeat of org.example.echo its publisher signed;
// the host removed its trust in that publisher (the bundle stays
// installed). Sync offers the heartbeat on every run (none is kept, so
// nothing holds it back); the store refuses it (no key it trusts signed
// it) and audits it every run. Should: a refused heartbeat is remembered
// by its SHA-256 until the store's trust changes, and a repeated
// identical refusal is not audited again.
func TestHeartbeatNoLongerTrustedAddsNothingOnRepeatRuns(t *testing.T) {
	p := newStore(t, testBundle(t, 1))
	applyHeartbeats(t, p, signedHeartbeat(t, 4, "2026-11-20T11:00:00Z", testKey))
	m, _ := startMirror(t, p, nil)
	c := &repeatCounting{h: m}
	ts := httptest.NewServer(c)
	defer ts.Close()
	s := agentStore(t, testBundle(t, 1))
	if err := s.TrustRemove("example"); err != nil {
		t.Fatal(err)
	}
	steadyState(t, repeatSync(t, s, ts.URL, 3, &c.fetches), "a heartbeat the host no longer trusts")
}

// TestRoguePublisherHeartbeatTooFarAddsNothingOnRepeatRuns: a
// rogue publisher (its key trusted for org.example) signs a heartbeat of
// the installed org.example.echo naming a version more than
// bundle.MaxHeartbeatJump above any the store knows. The store refuses it
// (heartbeat_too_far), keeps nothing, so nothing holds it back next run:
// signed as the store requires, it is offered past any cap and audited on
// every run. Should: a heartbeat refused for what it says (too far,
// replayed) is remembered by its SHA-256 and not offered again while the
// line's state is unchanged, and the identical refusal is not audited
// again.
func TestRoguePublisherHeartbeatTooFarAddsNothingOnRepeatRuns(t *testing.T) {
	hm := newRepeatMirror(t)
	hm.heartbeat(t, signedHeartbeat(t, bundle.MaxHeartbeatJump+5, "2026-11-20T11:00:00Z", testKey))
	ts := httptest.NewServer(hm)
	defer ts.Close()
	s := agentStore(t, testBundle(t, 1))
	steadyState(t, repeatSync(t, s, ts.URL, 3, &hm.fetches), "a heartbeat too far ahead")
}

// TestReplayedHeartbeatIsNotOffered pins a property verified
// here (it passes today): a genuine heartbeat older than the one the host
// keeps (heartbeat_replayed were it offered) is skipped by the index's
// bundle_id, version and created_at, before any download; so it costs the
// store nothing, however often it is listed.
func TestReplayedHeartbeatIsNotOffered(t *testing.T) {
	older := signedHeartbeat(t, 2, "2026-11-20T10:00:00Z", testKey)
	p := newStore(t, testBundle(t, 1))
	applyHeartbeats(t, p, older)
	m, _ := startMirror(t, p, nil)
	c := &repeatCounting{h: m}
	ts := httptest.NewServer(c)
	defer ts.Close()
	s := agentStore(t, testBundle(t, 1))
	if _, err := s.ApplyHeartbeat(signedHeartbeat(t, 3, "2026-11-20T11:00:00Z", testKey)); err != nil {
		t.Fatal(err)
	}
	runs := repeatSync(t, s, ts.URL, 2, &c.fetches)
	for i, r := range runs {
		if r.entries != 0 || r.genMoved || r.fetches != 0 {
			t.Errorf("run %d: %s, want nothing", i+1, r)
		}
	}
}

// TestRefusedFileIsTriedAgainOnceTheStoreChanges: a file skipped because
// the store refused it is skipped only while the store is unchanged: once
// the host trusts the bundles' signer for their names (the generation
// moves), the next run downloads and imports them.
func TestRefusedFileIsTriedAgainOnceTheStoreChanges(t *testing.T) {
	hm, ts, s := otherScopeBundles(t)
	pub := otherKey.Public().(ed25519.PublicKey)
	steadyState(t, repeatSync(t, s, ts.URL, 2, &hm.fetches), "bundles of another scope")
	if err := s.TrustRemove("other"); err != nil {
		t.Fatal(err)
	}
	if err := s.TrustAdd("other", pub, []string{"org.example"}); err != nil {
		t.Fatal(err)
	}
	f0 := hm.fetches.Load()
	rep, err := syncOnce(t, s, ts.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := rep.Count(OutcomeImported); n != 3 || hm.fetches.Load()-f0 != 3 {
		t.Fatalf("after the trust changed: %d imported, %d downloaded; want 3 and 3: %+v", n, hm.fetches.Load()-f0, rep.Items)
	}
}

// olderAgent is a store reached through the admin socket of an agent
// older than RefusedAt: it answers unsupported.
type olderAgent struct{ *resolver.Store }

func (olderAgent) RefusedAt([]byte) (string, bool, error) {
	return "", false, amp.Named(0, resolver.ErrUnsupported, "the agent's admin socket does not offer /v1/refused")
}

// TestSyncThroughAnOlderAgentOffersRefusedFilesAsBefore: a store that
// cannot say what it refused gets every listed file judged again, as
// before (the sync does not fail): files its trust refuses are refused
// by their heads each run, neither offered nor audited (MIRROR-23).
func TestSyncThroughAnOlderAgentOffersRefusedFilesAsBefore(t *testing.T) {
	hm, ts, s := otherScopeBundles(t)
	a0, _ := s.Audit()
	for run := range 2 {
		f0 := hm.fetches.Load()
		rep, err := Sync(context.Background(), olderAgent{s}, SyncOptions{URL: ts.URL, SpoolDir: filepath.Join(filepath.Dir(s.Path()), "sync")})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Count(OutcomeRefused) != 3 || hm.fetches.Load()-f0 != 3 {
			t.Fatalf("run %d through an older agent: %d refused, %d downloaded; want 3 and 3", run+1, rep.Count(OutcomeRefused), hm.fetches.Load()-f0)
		}
	}
	if a1, _ := s.Audit(); len(a1)-len(a0) != 0 {
		t.Fatalf("two runs through an older agent audited %d refusals, want none (refused by their heads, not offered)", len(a1)-len(a0))
	}
}

// TestGenuineRefusedFilesAreCappedPerRun: a mirror lists 70 genuine
// bundles, signed as the store requires, of versions the store revoked.
// Each refusal is an audit entry: one run has at most MaxStoreRefusals of
// them refused (the rest: too_many_refusals, not offered); the next run
// skips those and offers the rest; the third adds nothing.
func TestGenuineRefusedFilesAreCappedPerRun(t *testing.T) {
	hm := newRepeatMirror(t)
	var revoked []bundle.BundleVersion
	for i := range MaxStoreRefusals + 6 {
		id := fmt.Sprintf("org.example.r%d", i)
		hm.bundle(t, signedBundle(t, id, testKey))
		revoked = append(revoked, bundle.BundleVersion{BundleID: id, Version: 1})
	}
	ts := httptest.NewServer(hm)
	defer ts.Close()
	s := agentStore(t)
	if _, err := s.ApplyRevocation(signedRevocation(t, nil, revoked, testKey)); err != nil {
		t.Fatal(err)
	}
	runs := repeatSync(t, s, ts.URL, 3, &hm.fetches)
	if runs[0].entries != MaxStoreRefusals || runs[1].entries != 6 || runs[2].entries != 0 || runs[2].fetches != 0 {
		t.Fatalf("runs: %v; want %d refusals audited, then 6, then nothing", runs, MaxStoreRefusals)
	}
}

// TestBundleTheIndexSaysExpiredIsNotDownloaded: an entry whose
// expires_at has passed is refused before any download, so even the
// first run costs neither a download nor an audit entry; one not yet
// expired by the sync's clock is downloaded (and judged by the store).
func TestBundleTheIndexSaysExpiredIsNotDownloaded(t *testing.T) {
	hm := newRepeatMirror(t)
	hm.bundle(t, expiringEchoBundle(t, testNow.Add(time.Hour)))
	ts := httptest.NewServer(hm)
	defer ts.Close()
	s := agentStore(t)
	a0, _ := s.Audit()
	for _, c := range []struct {
		now     time.Time
		fetches int32
	}{{testNow.Add(2 * time.Hour), 0}, {testNow, 1}} {
		f0 := hm.fetches.Load()
		rep, err := syncOnce(t, s, ts.URL, func(o *SyncOptions) { o.Now = func() time.Time { return c.now } })
		if err != nil {
			t.Fatal(err)
		}
		if got := hm.fetches.Load() - f0; got != c.fetches {
			t.Fatalf("sync at %v: %d downloaded, want %d: %+v", c.now, got, c.fetches, rep.Items)
		}
		if c.fetches == 0 {
			if a1, _ := s.Audit(); len(a1) != len(a0) || rep.Items[0].Error != string(bundle.ErrExpired) {
				t.Fatalf("an expired entry: %+v, %d audit entries added; want expired and none", rep.Items, len(a1)-len(a0))
			}
		}
	}
}

// otherScopeBundles serves three genuine bundles under org.example signed
// by otherKey, which the returned store trusts only for com.vendor.
func otherScopeBundles(t *testing.T) (*repeatMirror, *httptest.Server, *resolver.Store) {
	t.Helper()
	hm := newRepeatMirror(t)
	for i := range 3 {
		hm.bundle(t, signedBundle(t, fmt.Sprintf("org.example.x%d", i), otherKey))
	}
	ts := httptest.NewServer(hm)
	t.Cleanup(ts.Close)
	s := agentStore(t)
	if err := s.TrustAdd("other", otherKey.Public().(ed25519.PublicKey), []string{"com.vendor"}); err != nil {
		t.Fatal(err)
	}
	return hm, ts, s
}

package mirror

import (
	"bytes"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/resolver"
)

// signedHeartbeat says org.example.echo is at version v at created.
func signedHeartbeat(t testing.TB, v uint64, created string, signers ...ed25519.PrivateKey) []byte {
	t.Helper()
	data, err := bundle.SignHeartbeat(&bundle.Heartbeat{Format: bundle.HeartbeatFormat, BundleID: "org.example.echo", Version: v, CreatedAt: created}, signers)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// applyHeartbeats applies heartbeats to the store at p, in order.
func applyHeartbeats(t testing.TB, p string, hbs ...[]byte) {
	t.Helper()
	s, err := resolver.Open(p, resolver.Options{Now: func() time.Time { return testNow }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, hb := range hbs {
		if _, err := s.ApplyHeartbeat(hb); err != nil {
			t.Fatal(err)
		}
	}
}

func echoStale(t *testing.T, s *resolver.Store) bool { return onlyBundle(t, s).Stale != "" }

// TestSyncedHeartbeatMakesAFrozenBundleStale: the heartbeat a station
// keeps reaches a host through the mirror (threat: a freeze attack inside
// the site, a courier or a local mirror keeping hosts on an old version;
// heartbeats used to stop at the station, so a freshness policy on a host
// that syncs never had one to judge by). It is served byte for byte at its
// hash and listed with its line, version and time; the host applies it
// against its own trust after the bundles, its bundle three versions
// behind with a policy of one fails closed as stale, and a second sync
// changes nothing.
func TestSyncedHeartbeatMakesAFrozenBundleStale(t *testing.T) {
	p := newStore(t, testBundle(t, 1))
	hb := signedHeartbeat(t, 4, "2026-11-20T11:00:00Z", testKey)
	applyHeartbeats(t, p, hb)
	_, ts := startMirror(t, p, nil)

	_, raw := get(t, http.MethodGet, ts.URL+IndexPath, nil)
	ix, err := DecodeIndex(raw)
	if err != nil || len(ix.Heartbeats) != 1 {
		t.Fatalf("index heartbeats: %+v %v", ix, err)
	}
	e := ix.Heartbeats[0]
	if e.BundleID != "org.example.echo" || e.Version != 4 || e.CreatedAt != "2026-11-20T11:00:00Z" || e.Size != int64(len(hb)) {
		t.Fatalf("index entry %+v", e)
	}
	resp, err := http.Get(ts.URL + e.Href)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !bytes.Equal(body, hb) || resp.Header.Get("Content-Type") != bundle.MediaTypeHeartbeat {
		t.Fatalf("served heartbeat: %d bytes, %s", len(body), resp.Header.Get("Content-Type"))
	}

	s := agentStore(t, testBundle(t, 1))
	if err := s.SetFreshness("*", 1); err != nil {
		t.Fatal(err)
	}
	dry, err := syncOnce(t, s, ts.URL, func(o *SyncOptions) { o.DryRun = true })
	if err != nil || len(dry.Heartbeats) != 1 || dry.Heartbeats[0].Outcome != OutcomePlanned || echoStale(t, s) {
		t.Fatalf("dry run: %+v %v", dry, err)
	}
	rep, err := syncOnce(t, s, ts.URL, nil)
	if err != nil || len(rep.Heartbeats) != 1 || rep.Heartbeats[0].Outcome != OutcomeImported || rep.Heartbeats[0].Stale == "" {
		t.Fatalf("sync: %+v %v", rep, err)
	}
	if !echoStale(t, s) {
		t.Fatal("the synced heartbeat did not make the frozen bundle stale")
	}
	before := state(t, s)
	rep, err = syncOnce(t, s, ts.URL, nil)
	if err != nil || rep.Heartbeats[0].Outcome != OutcomeCurrent || state(t, s) != before {
		t.Fatalf("second sync: %+v %v", rep, err)
	}
}

// TestOlderHeartbeatFromAMirrorIsNotOffered: a host that keeps a newer
// heartbeat than the mirror's is not offered the mirror's (threat: every
// sync auditing a refused replay, growing the audit log for nothing);
// once the host's own heartbeat no longer counts (its signer no longer
// trusted), the mirror's valid one is applied, as the store would take it
// from a file.
func TestOlderHeartbeatFromAMirrorIsNotOffered(t *testing.T) {
	p := newStore(t, testBundle(t, 1))
	applyHeartbeats(t, p, signedHeartbeat(t, 4, "2026-11-20T11:00:00Z", testKey))
	_, ts := startMirror(t, p, nil)
	s := agentStore(t, testBundle(t, 1))
	if _, err := s.ApplyHeartbeat(signedHeartbeat(t, 6, "2026-11-20T11:30:00Z", testKey)); err != nil {
		t.Fatal(err)
	}
	before := state(t, s)
	rep, err := syncOnce(t, s, ts.URL, nil)
	if err != nil || len(rep.Heartbeats) != 1 || rep.Heartbeats[0].Outcome != OutcomeCurrent || state(t, s) != before {
		t.Fatalf("an older heartbeat: %+v %v (state %s -> %s)", rep, err, before, state(t, s))
	}
	// The host's heartbeat stops counting: its signer is no longer
	// trusted; a new key is.
	if err := s.TrustRemove("example"); err != nil {
		t.Fatal(err)
	}
	if err := s.TrustAdd("other", otherKey.Public().(ed25519.PublicKey), []string{"org.example"}); err != nil {
		t.Fatal(err)
	}
	if rep, err = syncOnce(t, s, ts.URL, nil); err != nil || rep.Heartbeats[0].Outcome != OutcomeRefused || rep.Heartbeats[0].Error == "" {
		t.Fatalf("the mirror's heartbeat, signed by a key the host no longer trusts: %+v %v", rep, err)
	}
}

// rewriteIndex serves h with each heartbeat entry of its index changed by
// f (a lying mirror: the bytes served are genuine).
type rewriteIndex struct {
	h http.Handler
	f func(*IndexHeartbeat)
}

func (rw rewriteIndex) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != IndexPath {
		rw.h.ServeHTTP(w, r)
		return
	}
	rec := httptest.NewRecorder()
	rw.h.ServeHTTP(rec, r)
	var ix Index
	if err := json.Unmarshal(rec.Body.Bytes(), &ix); err != nil {
		http.Error(w, err.Error(), 500)
		return
	}
	for i := range ix.Heartbeats {
		rw.f(&ix.Heartbeats[i])
	}
	json.NewEncoder(w).Encode(ix)
}

// TestLyingMirrorHeartbeatsChangeNothing: a heartbeat whose bytes differ
// from what the index lists (one flipped bit), or whose statement says
// another version than the index (so that a host would apply what it
// meant to skip, or the reverse), is refused as index_mismatch before the
// store sees it.
func TestLyingMirrorHeartbeatsChangeNothing(t *testing.T) {
	p := newStore(t, testBundle(t, 1))
	applyHeartbeats(t, p, signedHeartbeat(t, 4, "2026-11-20T11:00:00Z", testKey))
	m, _ := startMirror(t, p, nil)
	for name, h := range map[string]http.Handler{
		"flipped bytes":     flipStatements{m},
		"another version":   rewriteIndex{m, func(e *IndexHeartbeat) { e.Version = 5 }},
		"another timestamp": rewriteIndex{m, func(e *IndexHeartbeat) { e.CreatedAt = "2026-11-20T11:00:01Z" }},
	} {
		t.Run(name, func(t *testing.T) {
			ts := httptest.NewServer(h)
			defer ts.Close()
			s := agentStore(t, testBundle(t, 1))
			before := state(t, s)
			rep, err := syncOnce(t, s, ts.URL, nil)
			if err != nil || len(rep.Heartbeats) != 1 || rep.Heartbeats[0].Outcome != OutcomeRefused || rep.Heartbeats[0].Error != string(ErrIndexMismatch) {
				t.Fatalf("sync: %+v %v", rep, err)
			}
			if kept, _ := s.Heartbeats(); len(kept) != 0 || state(t, s) != before {
				t.Fatalf("a lying mirror's heartbeat changed the store: %+v", kept)
			}
		})
	}
}

// TestHostileIndexHeartbeatsRefused: an index whose heartbeat entries
// break the rules of docs/FORMAT.md §11.1 is refused whole (bad_index).
func TestHostileIndexHeartbeatsRefused(t *testing.T) {
	h := hex.EncodeToString(make([]byte, 32))
	h2 := hex.EncodeToString(bytes.Repeat([]byte{1}, 32))
	entry := func(id string, version uint64, created string, size int, sum, href string) string {
		return fmt.Sprintf(`{"bundle_id":%q,"version":%d,"created_at":%q,"size":%d,"sha256":%q,"href":%q}`, id, version, created, size, sum, href)
	}
	ok := entry("org.example.echo", 4, "2026-11-20T11:00:00Z", 278, h, "/statements/"+h)
	for name, hb := range map[string]string{
		"bad bundle_id":  entry("Org..x", 4, "2026-11-20T11:00:00Z", 278, h, "/statements/"+h),
		"version 0":      entry("org.example.echo", 0, "2026-11-20T11:00:00Z", 278, h, "/statements/"+h),
		"local time":     entry("org.example.echo", 4, "2026-11-20T11:00:00+01:00", 278, h, "/statements/"+h),
		"repeated line":  ok + "," + entry("org.example.echo", 5, "2026-11-20T11:00:00Z", 278, h2, "/statements/"+h2),
		"repeated hash":  ok + "," + entry("org.example.other", 4, "2026-11-20T11:00:00Z", 278, h, "/statements/"+h),
		"bad hash":       entry("org.example.echo", 4, "2026-11-20T11:00:00Z", 278, "ZZ", "/statements/ZZ"),
		"oversize":       entry("org.example.echo", 4, "2026-11-20T11:00:00Z", 1<<20, h, "/statements/"+h),
		"empty":          entry("org.example.echo", 4, "2026-11-20T11:00:00Z", 0, h, "/statements/"+h),
		"other href":     entry("org.example.echo", 4, "2026-11-20T11:00:00Z", 278, h, "/bundles/org.example.echo"),
		"not an object":  `"x"`,
		"unknown member": `{"bundle_id":"org.example.echo","version":"4"}`,
	} {
		if _, err := DecodeIndex([]byte(`{"format":"ampbundle-mirror-index/1","generation":1,"bundles":[],"capabilities":[],"heartbeats":[` + hb + `]}`)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	ix, err := DecodeIndex([]byte(`{"format":"ampbundle-mirror-index/1","generation":1,"bundles":[],"capabilities":[],"heartbeats":[` + ok + `]}`))
	if err != nil || len(ix.Heartbeats) != 1 {
		t.Fatalf("a valid heartbeat entry: %v", err)
	}
}

// TestHeartbeatThatStoppedCountingIsAppliedAgain: a host keeping the same
// heartbeat bytes as the mirror, but no longer counting them (one signer
// it trusted is gone; another it trusts now also signed), is offered them
// again and judges them against its trust of now (threat: a frozen line
// left unflagged on every host because the bytes matched).
func TestHeartbeatThatStoppedCountingIsAppliedAgain(t *testing.T) {
	hb := signedHeartbeat(t, 4, "2026-11-20T11:00:00Z", testKey, otherKey)
	p := newStore(t, testBundle(t, 1))
	applyHeartbeats(t, p, hb)
	_, ts := startMirror(t, p, nil)
	s := agentStore(t, testBundle(t, 1))
	if _, err := s.ApplyHeartbeat(hb); err != nil { // counted for testKey alone
		t.Fatal(err)
	}
	if err := s.TrustRemove("example"); err != nil {
		t.Fatal(err)
	}
	if err := s.TrustAdd("other", otherKey.Public().(ed25519.PublicKey), []string{"org.example"}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetFreshness("*", 1); err != nil {
		t.Fatal(err)
	}
	if echoStale(t, s) {
		t.Fatal("stale before the sync: the kept heartbeat should not count")
	}
	rep, err := syncOnce(t, s, ts.URL, nil)
	if err != nil || len(rep.Heartbeats) != 1 || rep.Heartbeats[0].Outcome != OutcomeImported || !echoStale(t, s) {
		t.Fatalf("the same bytes, no longer counting: %+v %v", rep, err)
	}
}

// TestMirrorServesOnlyHeartbeatsThatCountServedLinesFirst: a mirror lists
// only the heartbeats that count in its store (threat: every host
// refusing, and auditing, a heartbeat its station no longer trusts on
// every sync), those of the lines it serves first; a host applies only
// heartbeats of lines it has installed (threat: a mirror listing
// heartbeats of made-up lines for a host to download and audit).
func TestMirrorServesOnlyHeartbeatsThatCountServedLinesFirst(t *testing.T) {
	p := newStore(t, testBundle(t, 1))
	aaa, err := bundle.SignHeartbeat(&bundle.Heartbeat{Format: bundle.HeartbeatFormat, BundleID: "org.example.aaa", Version: 2, CreatedAt: "2026-11-20T11:00:00Z"}, []ed25519.PrivateKey{testKey})
	if err != nil {
		t.Fatal(err)
	}
	applyHeartbeats(t, p, aaa, signedHeartbeat(t, 4, "2026-11-20T11:00:00Z", testKey))
	_, ts := startMirror(t, p, nil)
	_, raw := get(t, http.MethodGet, ts.URL+IndexPath, nil)
	ix, err := DecodeIndex(raw)
	if err != nil || len(ix.Heartbeats) != 2 || ix.Heartbeats[0].BundleID != "org.example.echo" || ix.Heartbeats[1].BundleID != "org.example.aaa" {
		t.Fatalf("index heartbeats, served line first: %+v %v", ix.Heartbeats, err)
	}
	s := agentStore(t, testBundle(t, 1))
	rep, err := syncOnce(t, s, ts.URL, nil)
	if err != nil || len(rep.Heartbeats) != 1 || rep.Heartbeats[0].BundleID != "org.example.echo" {
		t.Fatalf("a host applies the heartbeats of its installed lines only: %+v %v", rep.Heartbeats, err)
	}
	if kept, _ := s.Heartbeats(); len(kept) != 1 {
		t.Fatalf("kept %+v", kept)
	}

	// The station stops trusting the signer: its heartbeats count no more
	// and are not served.
	st, err := resolver.Open(p, resolver.Options{Now: func() time.Time { return testNow }})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.TrustRemove("example"); err != nil {
		t.Fatal(err)
	}
	st.Close()
	_, ts2 := startMirror(t, p, nil)
	_, raw = get(t, http.MethodGet, ts2.URL+IndexPath, nil)
	if ix, err := DecodeIndex(raw); err != nil || len(ix.Heartbeats) != 0 {
		t.Fatalf("heartbeats that no longer count at the station are served: %+v %v", ix, err)
	}
}

// cutStatements closes the connection of every request for a statement
// file, counting them (a mirror that stalls or drops each download).
type cutStatements struct {
	h    http.Handler
	hits *atomic.Int32
}

func (c cutStatements) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if len(r.URL.Path) > len(StatementsPrefix) && r.URL.Path[:len(StatementsPrefix)] == StatementsPrefix {
		c.hits.Add(1)
		if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
			conn.Close()
		}
		return
	}
	c.h.ServeHTTP(w, r)
}

// TestUnreachableMirrorCostsOneStallARun: after a statement whose
// download the mirror fails, the following statements are not tried in
// that run (threat: a mirror stalling each of 10,000 statements, a minute
// each, holding a sync for days); the bundles are still synced.
func TestUnreachableMirrorCostsOneStallARun(t *testing.T) {
	p := newStore(t, testBundle(t, 1), testBundle(t, 2))
	applyStatements(t, p, strangerRevocation(t, 1), strangerRevocation(t, 2), strangerRevocation(t, 3))
	m, _ := startMirror(t, p, nil)
	var hits atomic.Int32
	ts := httptest.NewServer(cutStatements{m, &hits})
	defer ts.Close()
	s := agentStore(t, testBundle(t, 1))
	rep, err := syncOnce(t, s, ts.URL, nil)
	if err != nil || len(rep.Statements) != 3 {
		t.Fatalf("sync: %+v %v", rep, err)
	}
	// One statement tried: net/http itself retries a GET once when a
	// reused connection is dropped before any answer.
	if hits.Load() > 2 || rep.Statements[0].Error != string(ErrMirrorUnreachable) ||
		!strings.Contains(rep.Statements[2].Message, "not tried") {
		t.Fatalf("%d statement downloads tried; statements %+v", hits.Load(), rep.Statements)
	}
	if len(rep.Items) != 1 || rep.Items[0].Outcome != OutcomeImported {
		t.Fatalf("the bundles were not synced after the failed statements: %+v", rep.Items)
	}
}

// TestBundleEntryWithUppercaseHashIsRefused: a bundle entry's sha256 must
// be lowercase hex, the form a syncing store compares and sends back in
// If-Range (threat: an entry every download of which ends as
// index_mismatch after the whole file was fetched).
func TestBundleEntryWithUppercaseHashIsRefused(t *testing.T) {
	entry := func(h string) string {
		return `{"format":"ampbundle-mirror-index/1","generation":1,"capabilities":[],"bundles":[{"bundle_id":"org.example.echo","version":1,"size":10,"sha256":"` +
			h + `","href":"/bundles/org.example.echo"}]}`
	}
	if _, err := DecodeIndex([]byte(entry(strings.Repeat("AB", 32)))); err == nil {
		t.Fatal("an uppercase sha256 was accepted")
	}
	if _, err := DecodeIndex([]byte(entry(strings.Repeat("ab", 32)))); err != nil {
		t.Fatalf("a lowercase sha256: %v", err)
	}
}

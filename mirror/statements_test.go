package mirror

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/resolver"
)

// signedRevocation revokes the given keys and bundle versions for
// org.example, signed by signers.
func signedRevocation(t testing.TB, keys []string, versions []bundle.BundleVersion, signers ...ed25519.PrivateKey) []byte {
	t.Helper()
	r := &bundle.Revocation{Format: bundle.RevocationFormat, Scope: "org.example", CreatedAt: "2026-11-20T11:00:00Z", Keys: keys, Bundles: versions}
	r.Normalize()
	data, err := bundle.SignRevocation(r, signers)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// strangerRevocation revokes a key nobody trusts (it changes no bundle).
func strangerRevocation(t testing.TB, n byte) []byte {
	stranger := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{n}, ed25519.SeedSize))
	return signedRevocation(t, []string{amp.DIDKey(stranger.Public().(ed25519.PublicKey))}, nil, testKey)
}

// applyStatements applies statements to the store at p, in order.
func applyStatements(t testing.TB, p string, sts ...[]byte) {
	t.Helper()
	s, err := resolver.Open(p, resolver.Options{Now: func() time.Time { return testNow }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, st := range sts {
		if _, err := s.ApplyRevocation(st); err != nil {
			t.Fatal(err)
		}
	}
}

// TestStatementsServedByteIdenticalAtTheirHash: the mirror serves every
// statement its store applied, byte for byte, at /statements/{sha256},
// ETag the hash, 304 on a match, HEAD without a body, listed in the index
// in application order; an unknown or malformed hash is not_found.
func TestStatementsServedByteIdenticalAtTheirHash(t *testing.T) {
	p := newStore(t, testBundle(t, 1))
	r1, r2 := strangerRevocation(t, 1), strangerRevocation(t, 2)
	applyStatements(t, p, r1, r2)
	_, ts := startMirror(t, p, nil)
	c := ts.Client()
	resp, err := c.Get(ts.URL + IndexPath)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	ix, err := DecodeIndex(raw)
	if err != nil {
		t.Fatal(err)
	}
	if len(ix.Statements) != 2 {
		t.Fatalf("index lists %d statements, want 2", len(ix.Statements))
	}
	for i, want := range [][]byte{r1, r2} {
		sum := sha256.Sum256(want)
		e := ix.Statements[i]
		if e.SHA256 != hex.EncodeToString(sum[:]) || e.Size != int64(len(want)) || e.ContentType != bundle.MediaTypeRevocation {
			t.Fatalf("index entry %d: %+v", i, e)
		}
		resp, err := c.Get(ts.URL + e.Href)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		etag := `"sha-256:` + e.SHA256 + `"`
		if resp.StatusCode != 200 || !bytes.Equal(got, want) || resp.Header.Get("ETag") != etag || resp.Header.Get("Content-Type") != bundle.MediaTypeRevocation {
			t.Fatalf("statement %d: status %d, equal %v, etag %s", i, resp.StatusCode, bytes.Equal(got, want), resp.Header.Get("ETag"))
		}
		req, _ := http.NewRequest(http.MethodGet, ts.URL+e.Href, nil)
		req.Header.Set("If-None-Match", etag)
		if resp, err := c.Do(req); err != nil || resp.StatusCode != http.StatusNotModified {
			t.Fatalf("conditional GET: %v %v", resp, err)
		}
		if resp, err := c.Head(ts.URL + e.Href); err != nil || resp.StatusCode != 200 || resp.ContentLength != int64(len(want)) {
			t.Fatalf("HEAD: %v %v", resp, err)
		}
	}
	for _, bad := range []string{
		StatementsPrefix + hex.EncodeToString(make([]byte, 32)),            // well formed, not served
		StatementsPrefix + "ABCDEF" + hex.EncodeToString(make([]byte, 29)), // upper case
		StatementsPrefix + ix.Statements[0].SHA256 + "/",                   // trailing slash
		StatementsPrefix + ix.Statements[0].SHA256[:63],                    // short
		StatementsPrefix + "../index.json",                                 // traversal
	} {
		resp, err := c.Get(ts.URL + bad)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("%s: status %d, want 404", bad, resp.StatusCode)
		}
	}
}

// TestHostileIndexStatementsRefused: an index whose statement entries
// break docs/FORMAT.md §11.1 (bad hash, repeated, unknown type, oversize,
// another href) is refused before anything is downloaded; an index of an
// older mirror, without "statements", is accepted as listing none.
func TestHostileIndexStatementsRefused(t *testing.T) {
	h := hex.EncodeToString(make([]byte, 32))
	ok := `{"content_type":"application/ampbundle-revocation+cbor","size":10,"sha256":"` + h + `","href":"/statements/` + h + `"}`
	for name, st := range map[string]string{
		"bad hash":     `{"content_type":"application/ampbundle-revocation+cbor","size":10,"sha256":"zz","href":"/statements/zz"}`,
		"repeated":     ok + "," + ok,
		"unknown type": `{"content_type":"application/ampbundle","size":10,"sha256":"` + h + `","href":"/statements/` + h + `"}`,
		"oversize":     `{"content_type":"application/ampbundle-revocation+cbor","size":99999999,"sha256":"` + h + `","href":"/statements/` + h + `"}`,
		"other href":   `{"content_type":"application/ampbundle-revocation+cbor","size":10,"sha256":"` + h + `","href":"/bundles/x"}`,
	} {
		if _, err := DecodeIndex([]byte(`{"format":"ampbundle-mirror-index/1","generation":1,"bundles":[],"capabilities":[],"statements":[` + st + `]}`)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	ix, err := DecodeIndex([]byte(`{"format":"ampbundle-mirror-index/1","generation":1,"bundles":[],"capabilities":[],"statements":[` + ok + `]}`))
	if err != nil || len(ix.Statements) != 1 {
		t.Fatalf("a valid statement entry: %v", err)
	}
	ix, err = DecodeIndex([]byte(`{"format":"ampbundle-mirror-index/1","generation":1,"bundles":[],"capabilities":[]}`))
	if err != nil || len(ix.Statements) != 0 {
		t.Fatalf("an older index: %v", err)
	}
}

// flipStatements flips one byte of every statement body h serves (a
// tampered mirror).
type flipStatements struct{ h http.Handler }

func (f flipStatements) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !strings.HasPrefix(r.URL.Path, StatementsPrefix) {
		f.h.ServeHTTP(w, r)
		return
	}
	rec := httptest.NewRecorder()
	f.h.ServeHTTP(rec, r)
	body := rec.Body.Bytes()
	if len(body) > 0 {
		body[len(body)/2] ^= 1
	}
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.WriteHeader(rec.Code)
	w.Write(body)
}

func revokedEcho1(t *testing.T, signers ...ed25519.PrivateKey) []byte {
	return signedRevocation(t, nil, []bundle.BundleVersion{{BundleID: "org.example.echo", Version: 1}}, signers...)
}

// onlyBundle is the one bundle s has installed.
func onlyBundle(t *testing.T, s *resolver.Store) resolver.Bundle {
	t.Helper()
	bs, err := s.Bundles()
	if err != nil || len(bs) != 1 {
		t.Fatalf("bundles %+v %v", bs, err)
	}
	return bs[0]
}

func echoRevoked(t *testing.T, s *resolver.Store) bool { return onlyBundle(t, s).Revoked != "" }

// TestSyncedRevocationReachesInstalledBundleFailsClosed: a revocation the
// station applied reaches an agent store through sync, verified against
// the agent's own trust, and the installed bundle it names fails closed;
// a second sync finds it applied and changes nothing.
func TestSyncedRevocationReachesInstalledBundleFailsClosed(t *testing.T) {
	p := newStore(t, testBundle(t, 1))
	rev := revokedEcho1(t, testKey)
	applyStatements(t, p, rev)
	_, ts := startMirror(t, p, nil)
	s := agentStore(t, testBundle(t, 1))
	if echoRevoked(t, s) {
		t.Fatal("revoked before the sync")
	}
	dry, err := syncOnce(t, s, ts.URL, func(o *SyncOptions) { o.DryRun = true })
	if err != nil || len(dry.Statements) != 1 || dry.Statements[0].Outcome != OutcomePlanned || echoRevoked(t, s) {
		t.Fatalf("dry run: %+v %v", dry, err)
	}
	rep, err := syncOnce(t, s, ts.URL, nil)
	if err != nil || len(rep.Statements) != 1 || rep.Statements[0].Outcome != OutcomeImported {
		t.Fatalf("sync: %+v %v", rep, err)
	}
	if !echoRevoked(t, s) {
		t.Fatal("the synced revocation did not reach the installed bundle")
	}
	sum := sha256.Sum256(rev)
	if has, _ := s.HasStatement(sum[:]); !has {
		t.Fatal("the applied statement is not kept")
	}
	before := state(t, s)
	rep, err = syncOnce(t, s, ts.URL, nil)
	if err != nil || rep.Statements[0].Outcome != OutcomeCurrent || state(t, s) != before {
		t.Fatalf("second sync: %+v %v", rep, err)
	}
}

// TestTamperedStatementFromMirrorChangesNothing: a mirror that serves a
// statement differing by one bit from what its index lists gets it
// refused (index_mismatch) before the store sees it.
func TestTamperedStatementFromMirrorChangesNothing(t *testing.T) {
	p := newStore(t, testBundle(t, 1))
	applyStatements(t, p, revokedEcho1(t, testKey))
	m, _ := startMirror(t, p, nil)
	ts := httptest.NewServer(flipStatements{m})
	defer ts.Close()
	s := agentStore(t, testBundle(t, 1))
	before := state(t, s)
	rep, err := syncOnce(t, s, ts.URL, nil)
	if err != nil || len(rep.Statements) != 1 || rep.Statements[0].Outcome != OutcomeRefused || rep.Statements[0].Error != string(ErrIndexMismatch) {
		t.Fatalf("sync: %+v %v", rep, err)
	}
	if echoRevoked(t, s) || state(t, s) != before || rep.Count(OutcomeRefused) != 1 {
		t.Fatalf("a tampered statement changed the store: %s -> %s", before, state(t, s))
	}
}

// TestStatementSignedByUntrustedKeyChangesNothing: a station that trusts
// a key the agent does not serves a revocation signed by it; the agent
// verifies it against its own trust, refuses it (untrusted_key), keeps its
// bundle, and audits the refusal.
func TestStatementSignedByUntrustedKeyChangesNothing(t *testing.T) {
	rogue := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{9}, ed25519.SeedSize))
	p := newStore(t, testBundle(t, 1))
	st, err := resolver.Open(p, resolver.Options{Now: func() time.Time { return testNow }})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.TrustAdd("rogue", rogue.Public().(ed25519.PublicKey), []string{"org.example"}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	applyStatements(t, p, revokedEcho1(t, rogue))
	_, ts := startMirror(t, p, nil)
	s := agentStore(t, testBundle(t, 1))
	before := state(t, s)
	rep, err := syncOnce(t, s, ts.URL, nil)
	if err != nil || len(rep.Statements) != 1 || rep.Statements[0].Outcome != OutcomeRefused || rep.Statements[0].Error != string(bundle.ErrUntrustedKey) {
		t.Fatalf("sync: %+v %v", rep, err)
	}
	if echoRevoked(t, s) || state(t, s) != before {
		t.Fatalf("a statement by an untrusted key changed the store: %s -> %s", before, state(t, s))
	}
	a, _ := s.Audit()
	if len(a) == 0 || a[len(a)-1].Action != "import_refused" {
		t.Fatal("the refusal is not audited")
	}
}

// rotationAfter signs, by signers, trust statement seq for org.example
// after prev (nil for the first), adding the key named name.
func rotationAfter(t *testing.T, prev []byte, seq uint64, name string, add ed25519.PrivateKey, signers ...ed25519.PrivateKey) []byte {
	t.Helper()
	r := &bundle.Rotation{Format: bundle.RotationFormat, Scope: "org.example", Sequence: seq, Prev: make([]byte, 32),
		CreatedAt: "2026-11-20T10:00:00Z", Threshold: 1,
		Add: []bundle.NamedKey{{Name: name, Key: amp.DIDKey(add.Public().(ed25519.PublicKey))}}}
	if prev != nil {
		sum := sha256.Sum256(prev)
		r.Prev = sum[:]
	}
	r.Normalize()
	data, err := bundle.SignRotation(r, signers)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// reverseIndexStatements serves h with the index's statements reversed (a
// mirror offering a trust chain out of order).
type reverseIndexStatements struct{ h http.Handler }

func (v reverseIndexStatements) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != IndexPath {
		v.h.ServeHTTP(w, r)
		return
	}
	rec := httptest.NewRecorder()
	v.h.ServeHTTP(rec, r)
	var ix Index
	if err := json.Unmarshal(rec.Body.Bytes(), &ix); err != nil {
		http.Error(w, "bad index", 500)
		return
	}
	slices.Reverse(ix.Statements)
	body, _ := json.Marshal(ix)
	w.Header().Set("Content-Type", "application/json")
	w.Write(body)
}

// TestOutOfOrderTrustStatementsFromMirrorRefused: a mirror listing a trust
// chain out of order gets the statement that skips ahead refused
// (rotation_gap) with nothing changed by it; the one in order is applied,
// and a later sync from an honest mirror completes the chain.
func TestOutOfOrderTrustStatementsFromMirrorRefused(t *testing.T) {
	k2 := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{21}, ed25519.SeedSize))
	k3 := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{22}, ed25519.SeedSize))
	s1 := rotationAfter(t, nil, 1, "second", k2, testKey)
	s2 := rotationAfter(t, s1, 2, "third", k3, k2)
	p := newStore(t, testBundle(t, 1))
	st, err := resolver.Open(p, resolver.Options{Now: func() time.Time { return testNow }})
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range [][]byte{s1, s2} {
		if _, err := st.ApplyRotation(x); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	m, honest := startMirror(t, p, nil)
	ts := httptest.NewServer(reverseIndexStatements{m})
	defer ts.Close()
	s := agentStore(t, testBundle(t, 1))
	rep, err := syncOnce(t, s, ts.URL, nil)
	if err != nil || len(rep.Statements) != 2 {
		t.Fatalf("sync: %+v %v", rep, err)
	}
	if rep.Statements[0].Outcome != OutcomeRefused || rep.Statements[0].Error != string(resolver.ErrRotationGap) || rep.Statements[1].Outcome != OutcomeImported {
		t.Fatalf("out of order: %+v", rep.Statements)
	}
	if chains, _ := s.TrustChains(); chains["org.example"] != 1 {
		t.Fatalf("chain after the out-of-order sync: %v", chains)
	}
	rep, err = syncOnce(t, s, honest.URL, nil)
	if err != nil || rep.Statements[0].Outcome != OutcomeCurrent || rep.Statements[1].Outcome != OutcomeImported {
		t.Fatalf("honest sync: %+v %v", rep, err)
	}
	if chains, _ := s.TrustChains(); chains["org.example"] != 2 {
		t.Fatalf("chain after the honest sync: %v", chains)
	}
}

// otherKey is a second publisher key of these tests, trusted by some of
// their stores only.
var otherKey = ed25519.NewKeyFromSeed(bytes.Repeat([]byte{9}, ed25519.SeedSize))

// trustOther has the (closed) store at p trust otherKey for scope.
func trustOther(t *testing.T, p, scope string) {
	t.Helper()
	st, err := resolver.Open(p, resolver.Options{Now: func() time.Time { return testNow }})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.TrustAdd("other", otherKey.Public().(ed25519.PublicKey), []string{scope}); err != nil {
		t.Fatal(err)
	}
}

// strangerRevocations returns n revocations for org.example, each of a
// different key nobody trusts, signed by signer.
func strangerRevocations(t *testing.T, n int, signer ed25519.PrivateKey) [][]byte {
	t.Helper()
	var out [][]byte
	for i := range n {
		stranger := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{byte(100 + i)}, ed25519.SeedSize))
		out = append(out, signedRevocation(t, []string{amp.DIDKey(stranger.Public().(ed25519.PublicKey))}, nil, signer))
	}
	return out
}

// refusalsIn counts the import_refused entries of s's audit log.
func refusalsIn(t *testing.T, s *resolver.Store) int {
	t.Helper()
	a, err := s.Audit()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range a {
		if e.Action == "import_refused" {
			n++
		}
	}
	return n
}

// TestMirrorCannotFloodTheAuditWithRefusedStatements: a mirror listing
// many statements no key the host trusts signed (an honest station that
// trusts more than the host, or a hostile mirror) gets at most
// MaxStoreRefusals of them offered to the host's store in one sync, each
// an audit entry; the rest are refused without reaching it
// (too_many_refusals) (threat: 10,000 audit entries a run, every run). A
// revocation a trusted key signed, listed after them, is still applied
// (threat: the cap keeping back a revocation for good), and the bundles
// are still synced.
func TestMirrorCannotFloodTheAuditWithRefusedStatements(t *testing.T) {
	p := newStore(t, testBundle(t, 1), testBundle(t, 2))
	trustOther(t, p, "org.example")
	sts := strangerRevocations(t, MaxStoreRefusals+6, otherKey)
	trusted := revokedEcho1(t, testKey)
	applyStatements(t, p, append(sts, trusted)...)
	_, ts := startMirror(t, p, nil)
	s := agentStore(t, testBundle(t, 1))
	before := refusalsIn(t, s)
	rep, err := syncOnce(t, s, ts.URL, nil)
	if err != nil || len(rep.Statements) != MaxStoreRefusals+7 {
		t.Fatalf("sync: %v, %d statements", err, len(rep.Statements))
	}
	capped := 0
	for _, it := range rep.Statements[:MaxStoreRefusals+6] {
		if it.Outcome != OutcomeRefused {
			t.Fatalf("statement %+v", it)
		}
		if it.Error == string(ErrTooManyRefusals) {
			capped++
		}
	}
	if capped != 6 || refusalsIn(t, s)-before != MaxStoreRefusals {
		t.Fatalf("%d not offered (want 6); %d refusals audited (want %d)", capped, refusalsIn(t, s)-before, MaxStoreRefusals)
	}
	sum := sha256.Sum256(trusted)
	if last := rep.Statements[len(rep.Statements)-1]; last.Outcome != OutcomeImported {
		t.Fatalf("the trusted revocation after the flood: %+v", last)
	}
	if has, _ := s.HasStatement(sum[:]); !has {
		t.Fatal("the trusted revocation was not applied")
	}
	if len(rep.Items) != 1 || rep.Items[0].Outcome != OutcomeImported {
		t.Fatalf("the bundle was not synced: %+v", rep.Items)
	}
}

// signedBundle is a one-schema bundle id at version 1 signed by key.
func signedBundle(t *testing.T, id string, key ed25519.PrivateKey) []byte {
	t.Helper()
	var file bytes.Buffer
	if _, err := bundle.Write(&file, &bundle.Draft{BundleID: id, Version: 1, CreatedAt: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC),
		Artifacts: []bundle.Source{bundle.BytesSource("s.json", bundle.MediaTypeSchema, []byte(`{"type":"object"}`))}},
		[]ed25519.PrivateKey{key}, bundle.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	return file.Bytes()
}

// TestMirrorCannotFloodTheAuditWithRefusedBundles: bundle files no key
// the host trusts signed (threat: a mirror listing thousands of tiny
// bundles of its own, each an audit entry every run) are refused by
// their heads, none offered to the store (MIRROR-23; before it, the first
// MaxStoreRefusals were offered and audited, the rest capped); a bundle a
// trusted key signed, listed after them, is still imported.
func TestMirrorCannotFloodTheAuditWithRefusedBundles(t *testing.T) {
	var files [][]byte
	for n := range MaxStoreRefusals + 3 {
		files = append(files, signedBundle(t, fmt.Sprintf("org.example.a%03d", n), otherKey))
	}
	files = append(files, signedBundle(t, "org.example.zz", testKey))
	p := filepath.Join(t.TempDir(), "station.db")
	st, err := resolver.Open(p, resolver.Options{Create: true, Now: func() time.Time { return testNow }})
	if err != nil {
		t.Fatal(err)
	}
	for name, k := range map[string]ed25519.PrivateKey{"example": testKey, "other": otherKey} {
		if err := st.TrustAdd(name, k.Public().(ed25519.PublicKey), []string{"org.example"}); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range files {
		if _, err := st.Import(context.Background(), bytes.NewReader(f), resolver.ImportOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	_, ts := startMirror(t, p, nil)
	s := agentStore(t)
	before := refusalsIn(t, s)
	rep, err := syncOnce(t, s, ts.URL, nil)
	if err != nil || len(rep.Items) != MaxStoreRefusals+4 {
		t.Fatalf("sync: %v, %d bundles", err, len(rep.Items))
	}
	byHead := 0
	for _, it := range rep.Items {
		if it.Error == string(bundle.ErrUntrustedKey) {
			byHead++
		}
	}
	last := rep.Items[len(rep.Items)-1]
	if byHead != MaxStoreRefusals+3 || refusalsIn(t, s)-before != 0 || last.BundleID != "org.example.zz" || last.Outcome != OutcomeImported {
		t.Fatalf("%d refused by their heads (want %d), %d refusals audited (want 0), last %+v", byHead, MaxStoreRefusals+3, refusalsIn(t, s)-before, last)
	}
}

// TestKeyTrustedElsewhereCannotFloodTheAudit: statements signed by a key
// the host trusts only for another scope count toward the cap as the
// store refuses them (threat: a key trusted for one vendor, or one a
// revocation narrowed, adding audit entries without bound because it is
// trusted somewhere).
func TestKeyTrustedElsewhereCannotFloodTheAudit(t *testing.T) {
	p := newStore(t, testBundle(t, 1))
	trustOther(t, p, "org.example")
	sts := strangerRevocations(t, MaxStoreRefusals+10, otherKey)
	applyStatements(t, p, sts...)
	_, ts := startMirror(t, p, nil)
	s := agentStore(t, testBundle(t, 1))
	if err := s.TrustAdd("other", otherKey.Public().(ed25519.PublicKey), []string{"com.vendor"}); err != nil {
		t.Fatal(err)
	}
	before := refusalsIn(t, s)
	rep, err := syncOnce(t, s, ts.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	capped := 0
	for _, it := range rep.Statements {
		if it.Error == string(ErrTooManyRefusals) {
			capped++
		}
	}
	if capped != 10 || refusalsIn(t, s)-before != MaxStoreRefusals {
		t.Fatalf("%d not offered (want 10), %d refusals audited (want %d)", capped, refusalsIn(t, s)-before, MaxStoreRefusals)
	}
}

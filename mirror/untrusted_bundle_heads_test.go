package mirror

// Threats on what a listed bundle file costs a sync before its signatures
// are judged (docs/SPEC-DECISIONS.md MIRROR-23).

import (
	"bytes"
	"crypto/ed25519"
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

	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/capability"
	"github.com/ampbundle/ampbundle/resolver"
)

// manyArtifactsBundle is bundle id version 1 signed by key, with n small
// artifacts (a signed manifest of about n*100 bytes) and one of pad bytes.
func manyArtifactsBundle(t *testing.T, id string, key ed25519.PrivateKey, n, pad int) []byte {
	t.Helper()
	version, err := capability.ParseVersion("1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	arts := []bundle.Source{bundle.BytesSource("s.json", bundle.MediaTypeSchema, []byte(`{"type":"object"}`)),
		bundle.BytesSource("pad.bin", "application/octet-stream", bytes.Repeat([]byte{'p'}, pad))}
	for i := range n {
		arts = append(arts, bundle.BytesSource(fmt.Sprintf("a%05d.bin", i), "application/octet-stream", []byte(strconv.Itoa(i))))
	}
	var file bytes.Buffer
	if _, err := bundle.Write(&file, &bundle.Draft{
		BundleID: id, Version: 1, CreatedAt: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), Artifacts: arts,
		Capabilities: []capability.Descriptor{{Name: id, Version: version,
			InputSchema: capability.SchemaRef{ArtifactKey: "s.json"}, OutputSchema: capability.SchemaRef{ArtifactKey: "s.json"}}},
	}, []ed25519.PrivateKey{key}, bundle.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	return file.Bytes()
}

// TestFirstUntrustedBundlesDownloadedWholeBeforeTheCap: a mirror with a
// key of its own lists a few large bundles of lines the host lacks, signed
// by that key (fresh signatures each run: no record of refusals knows
// them). Before MIRROR-23 the first MaxStoreRefusals such files of a run
// were downloaded whole (up to 64 GiB at the default limits) only to be
// refused by the store; their heads say as much. Each now costs its head.
func TestFirstUntrustedBundlesDownloadedWholeBeforeTheCap(t *testing.T) {
	const n, pad = 3, 1 << 20
	own := ownKey(123)
	var files [][]byte
	for i := range n {
		files = append(files, paddedBundle(t, fmt.Sprintf("org.example.own%d", i), own, pad))
	}
	cb := stationOf(t, []ed25519.PrivateKey{own}, files...)
	s := agentStore(t)
	before := refusalsIn(t, s)
	rep, err := syncOnce(t, s, urlOf(t, cb), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range rep.Items {
		if it.Outcome != OutcomeRefused || it.Error != string(bundle.ErrUntrustedKey) {
			t.Fatalf("%+v; want refused %s", it, bundle.ErrUntrustedKey)
		}
	}
	if got, most := cb.n.Load(), int64(n*bundleHeadBytes); got > most {
		t.Fatalf("one run downloaded %d bytes of %d bundle files no trusted key signs, over %d: downloaded whole (%d bytes each) before the cap", got, n, most, len(files[0]))
	}
	if d := refusalsIn(t, s) - before; d != 0 {
		t.Errorf("%d refusals audited; want none (nothing offered)", d)
	}
}

// TestLargeManifestHeadsEachCostTheirWholeManifest: a mirror lists bundles
// of its own key whose signed manifests are large (near the 16 MiB the
// store takes; here against the test's smaller budget). Before MIRROR-23
// each was downloaded whole before the cap, and past it each head larger
// than 64 KiB was read up to 32 MiB (two manifest items), whatever its
// manifest needed. Now a head is read in steps (at most four times what
// its manifest needs), and the heads refused in a run take a budget past
// their first 64 KiB: once it is spent, a head larger than 64 KiB is not
// read further in that run (limit_exceeded).
func TestLargeManifestHeadsEachCostTheirWholeManifest(t *testing.T) {
	const n, arts, pad = 6, 1500, 256 << 10
	own := ownKey(124)
	var files [][]byte
	for i := range n {
		files = append(files, manyArtifactsBundle(t, fmt.Sprintf("org.example.big%d", i), own, arts, pad))
	}
	in, err := bundle.Inspect(bytes.NewReader(files[0]), 0)
	if err != nil {
		t.Fatal(err)
	}
	head := int64(len(in.SignedManifest))
	if head <= bundleHeadBytes {
		t.Fatalf("a signed manifest of %d bytes: not larger than a first head read", head)
	}
	budget := 2 * head
	cb := stationOf(t, []ed25519.PrivateKey{own}, files...)
	s := agentStore(t)
	rep, err := syncWithHooks(t, s, urlOf(t, cb), syncHooks{headBudget: budget}, nil)
	if err != nil {
		t.Fatal(err)
	}
	over := 0
	for _, it := range rep.Items {
		if it.Error == string(ErrTooLarge) {
			over++
		}
	}
	// Every file's first 64 KiB, the budget, and the head that spent it
	// (at most four times its manifest).
	most := n*bundleHeadBytes + budget + 4*head
	if got := cb.n.Load(); got > most || over == 0 {
		t.Fatalf("one run downloaded %d bytes (most %d) of %d files of %d bytes with %d-byte signed manifests no trusted key signs; %d refused %s, want some: %+v", got, most, n, len(files[0]), head, over, ErrTooLarge, rep.Items)
	}
}

// revokedInstall is a site holding published (org.example.echo version
// 1, signed by testKey) failed closed by trust rm --fail-closed of
// testKey's entry; trustedAgain: the key is then trusted again, so that a
// copy of the install stands (MIRROR-22: its head is judged first).
func revokedInstall(t *testing.T, published []byte, trustedAgain bool) *resolver.Store {
	t.Helper()
	site := agentStore(t, published)
	if gone, err := site.TrustRemoveFailClosed("example"); err != nil || len(gone) != 1 {
		t.Fatalf("trust rm --fail-closed: %v, %v", gone, err)
	}
	if trustedAgain {
		if err := site.TrustAdd("example", testKey.Public().(ed25519.PublicKey), []string{"org.example"}); err != nil {
			t.Fatal(err)
		}
	}
	return site
}

// TestJudgedHeadIsVerifiedAgainAfterTheDownload: a file whose head
// judgeHead read and verified was read and verified once more after its
// download (a mirror's signatures cost twice the CPU, its head three
// reads). Now the verdict stands for a file that begins with that head.
func TestJudgedHeadIsVerifiedAgainAfterTheDownload(t *testing.T) {
	published := largeEchoBundle(t, 256<<10)
	cb := stationOf(t, []ed25519.PrivateKey{testKey}, published)
	s := revokedInstall(t, published, true)
	var checks atomic.Int32
	rep, err := syncWithHooks(t, s, urlOf(t, cb), syncHooks{verified: func() { checks.Add(1) }}, nil)
	if it := soleItem(t, rep, err); it.Outcome != OutcomeImported {
		t.Fatalf("the copy over the revoked install: %+v; want imported", it)
	}
	if n := checks.Load(); n != 1 {
		t.Fatalf("the signatures of one bundle file were checked %d times before it was offered; want once", n)
	}
}

// cutHead answers the first request for a bundle file with its first
// bytes only (the connection then closes), and records the Range of
// every request for one.
type cutHead struct {
	h      http.Handler
	cut    int
	once   atomic.Bool
	ranges []string
}

func (c *cutHead) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !strings.HasPrefix(r.URL.Path, BundlesPrefix) {
		c.h.ServeHTTP(w, r)
		return
	}
	c.ranges = append(c.ranges, r.Header.Get("Range"))
	if c.once.CompareAndSwap(false, true) {
		rec := httptest.NewRecorder()
		c.h.ServeHTTP(rec, r)
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		w.Write(rec.Body.Bytes()[:c.cut])
		return // short of its Content-Length: the client sees it cut off
	}
	c.h.ServeHTTP(w, r)
}

// TestCutOffHeadIsDownloadedAgainFromItsStart: a head read cut off (a
// stall, a timeout, a dropped link) was discarded, so every run on a link
// that drops started the head over, the whole signed manifest (up to
// 16 MiB) each time. The bytes that arrived are now kept and the next run
// resumes after them, as for the rest of a file.
func TestCutOffHeadIsDownloadedAgainFromItsStart(t *testing.T) {
	const cut = 16 << 10
	published := largeEchoBundle(t, 256<<10)
	m := stationOf(t, []ed25519.PrivateKey{testKey}, published)
	ch := &cutHead{h: m.h, cut: cut}
	url := urlOf(t, ch)
	s := revokedInstall(t, published, true)
	if it := syncItem(t, s, url); it.Error != string(ErrIncomplete) {
		t.Fatalf("run 1: %+v; want %s", it, ErrIncomplete)
	}
	if it := syncItem(t, s, url); it.Outcome != OutcomeImported {
		t.Fatalf("run 2: %+v; want imported", it)
	}
	if len(ch.ranges) < 2 || ch.ranges[1] != fmt.Sprintf("bytes=%d-%d", cut, bundleHeadBytes-1) {
		t.Fatalf("ranges asked: %q; want run 2 to resume the head at byte %d", ch.ranges, cut)
	}
}

// TestNotesSavedThroughASpoolLinkOthersMayRepoint: the spool's path runs
// through a folder others may write (so the notes are not read: MIRROR-18),
// holding a link its owner points at another store's spool synced from the
// same mirror. The notes of this run's refusals were written through the
// path as given, so into that other spool, where its syncs read them (its
// folder is sound) and skip what they name. They are now written only
// beneath the folder the path resolved to and was judged sound, else not
// at all.
func TestNotesSavedThroughASpoolLinkOthersMayRepoint(t *testing.T) {
	published := signedBundle(t, "org.example.echo", testKey)
	cb := stationOf(t, []ed25519.PrivateKey{testKey}, published)
	s := revokedInstall(t, published, false)
	base := t.TempDir()
	shared, victim := filepath.Join(base, "shared"), filepath.Join(base, "victim")
	for _, d := range []string{shared, victim} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(shared, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, filepath.Join(shared, "spool")); err != nil {
		t.Fatal(err)
	}
	rep, err := syncOnce(t, s, urlOf(t, cb), func(o *SyncOptions) { o.SpoolDir = filepath.Join(shared, "spool") })
	if it := soleItem(t, rep, err); it.Error != string(bundle.ErrUntrustedKey) {
		t.Fatalf("%+v; want refused %s (a note)", it, bundle.ErrUntrustedKey)
	}
	if names, _ := filepath.Glob(filepath.Join(victim, localRefusalsPrefix+"*")); len(names) != 0 {
		t.Fatalf("notes written through a link others may repoint, into %v", names)
	}
}

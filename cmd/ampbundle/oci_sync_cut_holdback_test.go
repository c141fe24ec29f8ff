package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/ampbundle/ampbundle/ocitransport"
)

// resolveLayoutTag is the artifact the layout dir resolves tag to.
func resolveLayoutTag(t *testing.T, dir, tag string) *ocitransport.Artifact {
	t.Helper()
	loc, err := ocitransport.ParseLocation("oci-layout:" + dir)
	if err != nil {
		t.Fatal(err)
	}
	ep, err := ocitransport.Open(t.Context(), loc, ocitransport.Options{}, ocitransport.ReadOnly)
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	a, err := ep.Resolve(t.Context(), tag)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestOCISyncUnannotatedCopyOfAnOlderVersionIsHeldBack: the attack: whoever may push tags and referrers floods the genuine newest
// version 2 with more than MaxReferrers junk referrers (so it is cut and
// only verified) and pushes one more tag, "copy": a manifest of version
// 1's own layers WITHOUT the bundle_id and version annotations (the
// blobs are already in the repository; no signing key needed). Were the
// hold-back of a verified cut candidate to cover only the candidates
// whose bundle_id ANNOTATION is the cut one's, the unannotated copy would
// be "synced alone" and import version 1: the pusher would choose the
// version that lands. A candidate whose file turns out (at inspect) to be
// a bundle_id held back by a verified cut version at or above it is
// refused oci_too_many like the annotated ones; nothing is installed
// (docs/SPEC-DECISIONS.md OCI-9, amended in review 39).
func TestOCISyncUnannotatedCopyOfAnOlderVersionIsHeldBack(t *testing.T) {
	dir, genuine := layoutOfTwoVersions(t)
	v1 := resolveLayoutTag(t, dir, "v1")
	addToLayout(t, dir, "copy", ocitransport.BundleManifest(v1.Manifest.Layers, v1.FileSize, v1.FileSHA256, "", "", 0))
	repo := floodedLayoutServer(t, dir, map[digest.Digest][]ocispec.Descriptor{
		genuine.Descriptor.Digest: junkReferrers(ocitransport.MaxReferrers+1, "pushed at v2 "),
	})
	db := newStore(t)
	r := runCLI(t, nil, "sync", repo, "--plain-http", "--db", db, "--json")
	got := syncEntries(t, r)
	if v2 := got["v2/bundle"]; v2.Outcome != ociRefused || v2.Error != string(ocitransport.ErrTooMany) {
		t.Fatalf("version 2, its referrers unread, is %+v; want refused %s\n%s", v2, ocitransport.ErrTooMany, r.stderr)
	}
	if v := installed(t, db, translateID); v != 0 {
		t.Fatalf("the verified version 2 was cut by %d pushed referrers, and an unannotated copy of version 1 pushed beside it installed version %d (copy: %+v): the pusher chose the version",
			ocitransport.MaxReferrers+1, v, got["copy/bundle"])
	}
}

// layoutWithRevokedV3 is layoutOfTwoVersions with version 3 pushed as
// v3 too, v3's artifact, and the publisher's revocation of version 3 (a
// statement file to import).
func layoutWithRevokedV3(t *testing.T) (dir string, v3 *ocitransport.Artifact, stmt string) {
	t.Helper()
	dir, _ = layoutOfTwoVersions(t)
	mustRun(t, "push", translateVersion(t, 3), "oci-layout:"+dir+":v3")
	v3 = resolveLayoutTag(t, dir, "v3")
	stmt = filepath.Join(t.TempDir(), "revoke-v3.cbor")
	mustRun(t, "revoke", "-o", stmt, "--scope", "org.example", "--revoke-bundle", translateID+"@3",
		"--key", sampleKey(t, "example-publisher"), "--created", "2026-11-22T00:00:00Z")
	return dir, v3, stmt
}

// TestOCISyncRevokedCutVersionHoldsNothingBack: the attack:
// the publisher revoked version 3 (the store applied the revocation) and
// version 2 is the one to install; version 3's tag is still in the
// repository, as tags usually stay. Without interference sync refuses
// version 3 at import (revoked) and falls back to version 2. A co-tenant
// floods version 3 with more than MaxReferrers junk referrers: it is cut,
// and is only judged. Were it judged by its signatures alone, not by what
// the store's import would refuse (a revoked version, a pinned floor),
// the revoked version 3 would "verify" and hold version 2 back, run after
// run. A cut candidate that the store would refuse anyway (revoked)
// holds nothing back, as a refused candidate at import does: version 2 is
// installed (docs/SPEC-DECISIONS.md OCI-9, amended in review 39).
func TestOCISyncRevokedCutVersionHoldsNothingBack(t *testing.T) {
	dir, v3, stmt := layoutWithRevokedV3(t)
	revokedStore := func() string {
		db := newStore(t)
		mustRun(t, "import", stmt, "--db", db)
		return db
	}
	// The control: unflooded, the revoked version 3 is refused at import
	// and version 2 lands.
	control := revokedStore()
	cr := runCLI(t, nil, "sync", floodedLayoutServer(t, dir, nil), "--plain-http", "--db", control, "--json")
	if v := installed(t, control, translateID); v != 2 {
		t.Fatalf("the control (no flood) installed version %d, want 2\n%s", v, cr.stdout)
	}

	db := revokedStore()
	repo := floodedLayoutServer(t, dir, map[digest.Digest][]ocispec.Descriptor{
		v3.Descriptor.Digest: junkReferrers(ocitransport.MaxReferrers+1, "pushed at revoked v3 "),
	})
	r := runCLI(t, nil, "sync", repo, "--plain-http", "--db", db, "--json")
	got := syncEntries(t, r)
	if v := installed(t, db, translateID); v != 2 {
		t.Fatalf("junk referrers pushed at the REVOKED version 3 held the installable version 2 out (installed: %d)\nv3: %+v\nv2: %+v",
			v, got["v3/bundle"], got["v2/bundle"])
	}
}

// TestOCISyncCutVersionTheRegistryFailsToServeHoldsNothingBack: a
// co-tenant floods the genuine newest version 3 with more than
// MaxReferrers junk referrers (it is cut, only judged), and the registry
// fails while its file is pulled (500). A cut candidate holds back only by
// a header read from its file and judged by the store: one whose file
// could not be read proves nothing of its bundle_id, and were it to hold
// back by its annotations, a key-less pusher's tag whose blob fails would
// hold every genuine version out, run after run
// (TestOCISyncForgedCutTagWhosePullFailsHoldsNothingBack). So version 3
// is refused with the registry's error and holds nothing back: version 2,
// which the store takes, is installed (docs/SPEC-DECISIONS.md OCI-9,
// amended in reviews 39 and 45).
func TestOCISyncCutVersionTheRegistryFailsToServeHoldsNothingBack(t *testing.T) {
	dir, _ := layoutOfTwoVersions(t)
	mustRun(t, "push", translateVersion(t, 3), "oci-layout:"+dir+":v3")
	v3 := resolveLayoutTag(t, dir, "v3")
	failing := map[string]bool{}
	for _, l := range v3.Manifest.Layers {
		failing[l.Digest.String()] = true
	}
	repo, _ := cutLayoutServer(t, dir, map[digest.Digest][]ocispec.Descriptor{
		v3.Descriptor.Digest: junkReferrers(ocitransport.MaxReferrers+1, "pushed at v3 "),
	}, failing)
	db := newStore(t)
	r := runCLI(t, nil, "sync", repo, "--plain-http", "--db", db, "--json")
	got := syncEntries(t, r)
	if v := installed(t, db, translateID); v != 2 {
		t.Fatalf("the cut version 3 could not be pulled (the registry failed) and held back by its annotations: version %d installed, want 2\nv3: %+v\nv2: %+v", v, got["v3/bundle"], got["v2/bundle"])
	}
	if v3 := got["v3/bundle"]; v3.Outcome != ociRefused || v3.Error == string(ocitransport.ErrTooMany) {
		t.Fatalf("version 3, whose file the registry failed to serve: %+v; want refused with the registry's error", v3)
	}
}

// cutLayoutServer serves the layout dir as the registry repository amp/x,
// as floodedLayoutServer does, and answers 500 to a request for a blob
// failing names; its layoutRegistry counts the bytes of each blob sent.
func cutLayoutServer(t *testing.T, dir string, flooded map[digest.Digest][]ocispec.Descriptor, failing map[string]bool) (string, *layoutRegistry) {
	t.Helper()
	lr := &layoutRegistry{dir: dir, sent: map[string]int64{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if subject, ok := strings.CutPrefix(r.URL.Path, "/v2/amp/x/referrers/"); ok {
			w.Header().Set("Content-Type", ocispec.MediaTypeImageIndex)
			w.Write(referrersPage(flooded[digest.Digest(subject)]...))
			return
		}
		if failing[strings.TrimPrefix(r.URL.Path, "/v2/amp/x/blobs/")] {
			http.Error(w, "unavailable", http.StatusInternalServerError)
			return
		}
		lr.serve(w, r)
	}))
	t.Cleanup(srv.Close)
	return "oci://" + strings.TrimPrefix(srv.URL, "http://") + "/amp/x", lr
}

// TestOCISyncManyTagsOnACutVersionPullItOnce: whoever may push tags and
// referrers floods the genuine version 2 (it is cut) and adds 30 more
// tags on its manifest. Every cut candidate is judged before any bundle
// is imported; were each tag pulled and judged on its own, one stored
// file would cost a full download per tag in every run (a 4 GiB layer,
// MaxTags tags). A file judged once in a sync is judged by that verdict
// (docs/SPEC-DECISIONS.md OCI-16; OCI-9, amended in review 39).
func TestOCISyncManyTagsOnACutVersionPullItOnce(t *testing.T) {
	const extra = 30
	dir, genuine := layoutOfTwoVersions(t)
	raw := readAll(t, filepath.Join(dir, "blobs", "sha256", genuine.Descriptor.Digest.Encoded()))
	for i := range extra {
		addToLayout(t, dir, fmt.Sprint("v2-copy-", i), raw)
	}
	repo, lr := cutLayoutServer(t, dir, map[digest.Digest][]ocispec.Descriptor{
		genuine.Descriptor.Digest: junkReferrers(ocitransport.MaxReferrers+1, "pushed at v2 "),
	}, nil)
	db := newStore(t)
	r := runCLI(t, nil, "sync", repo, "--plain-http", "--db", db, "--json")
	got := syncEntries(t, r)
	if v := installed(t, db, translateID); v != 0 {
		t.Fatalf("version %d installed while the verified version 2 was cut", v)
	}
	if c := got["v2-copy-7/bundle"]; c.Outcome != ociRefused || c.Error != string(ocitransport.ErrTooMany) {
		t.Fatalf("a tag on the cut version 2: %+v; want refused %s", c, ocitransport.ErrTooMany)
	}
	for _, l := range genuine.Manifest.Layers {
		lr.mu.Lock()
		sent := lr.sent[l.Digest.Encoded()]
		lr.mu.Unlock()
		if sent > l.Size {
			t.Fatalf("version 2's layer (%d bytes) was sent %d bytes: pulled %d times for %d tags on one cut manifest",
				l.Size, sent, sent/max(1, l.Size), extra+1)
		}
	}
}

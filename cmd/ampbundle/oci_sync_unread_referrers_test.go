package main

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/ocitransport"
)

// revocationReferrer is a revocation statement manifest whose subject is
// the bundle manifest subject (size n) and its descriptor as a referrers
// listing gives it.
func revocationReferrer(subject digest.Digest, n int) ([]byte, ocispec.Descriptor) {
	emptyJSON := []byte("{}")
	layer := []byte("a revocation")
	raw, _ := json.Marshal(ocispec.Manifest{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageManifest,
		ArtifactType: ocitransport.ArtifactTypeRevocation,
		Config:       ocispec.Descriptor{MediaType: ocitransport.MediaTypeEmptyConfig, Digest: digest.FromBytes(emptyJSON), Size: 2},
		Layers:       []ocispec.Descriptor{{MediaType: bundle.MediaTypeRevocation, Digest: digest.FromBytes(layer), Size: int64(len(layer))}},
		Subject:      &ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: subject, Size: int64(n)}})
	return raw, ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, ArtifactType: ocitransport.ArtifactTypeRevocation,
		Digest: digest.FromBytes(raw), Size: int64(len(raw))}
}

// junkReferrers is n heartbeat descriptors pushed at a bundle by whoever
// may push referrers (a co-tenant: a referrer is any manifest with the
// victim as its subject); the registry serves none of them.
func junkReferrers(n int, seed string) []ocispec.Descriptor {
	out := make([]ocispec.Descriptor, n)
	for j := range out {
		out[j] = ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, ArtifactType: ocitransport.ArtifactTypeHeartbeat,
			Digest: digest.FromString(fmt.Sprint(seed, j)), Size: 500}
	}
	return out
}

// TestOCISyncReferrerFloodOverMaxReferrersDoesNotInstallTheBundleUnread: a
// co-tenant pushes MaxReferrers junk statements at a bundle that has a
// genuine revocation attached. The listing then holds MaxReferrers+1
// entries and fails as a whole (oci_too_many): none of the bundle's
// referrers is read, its revocation among them. The bundle must not be
// planned (refused oci_too_many, "not installed in this run"), as one whose
// share was spent is: eleven junk referrers over a share of ten got it
// refused, a thousand got it installed unrevoked (docs/SPEC-DECISIONS.md
// OCI-13, amended in review 36).
func TestOCISyncReferrerFloodOverMaxReferrersDoesNotInstallTheBundleUnread(t *testing.T) {
	tags, manifests, digests := fakeBundles(1)
	victim := digests[0]
	raw, right := revocationReferrer(victim, len(manifests[tags[0]]))
	manifests[right.Digest.String()] = raw
	listing := append([]ocispec.Descriptor{right}, junkReferrers(ocitransport.MaxReferrers, "co-tenant junk ")...)
	ep, loc := manifestRegistry(t, tags, manifests, func(subject string) []byte {
		if subject == victim.String() {
			return referrersPage(listing...)
		}
		return nil
	}, new(atomic.Int64))
	rep, err := planOCISync(context.Background(), ep, loc, "*")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range rep.Entries {
		if e.Kind != ocitransport.KindBundle || e.art == nil || e.art.Descriptor.Digest != victim {
			continue
		}
		if e.Outcome != ociRefused || e.Error != string(ocitransport.ErrTooMany) || !strings.Contains(e.Message, "not installed in this run") {
			t.Fatalf("a co-tenant's %d junk referrers pushed at a revoked bundle (listing of %d, over MaxReferrers, read not at all): the bundle is %s %s (%s), want refused %s",
				ocitransport.MaxReferrers, len(listing), e.Outcome, e.Error, e.Message, ocitransport.ErrTooMany)
		}
		return
	}
	t.Fatal("the victim bundle is not in the report")
}

// TestOCISyncJunkTagsDoNotShrinkAGenuineBundlesShare: whoever may push
// tags adds 999 tags on one tiny bundle manifest with no referrers. Were
// the share of referrer fetches MaxSyncStatements over the tags, the one
// genuine bundle's share would drop from MaxReferrers to 100, and a bundle
// with 150 statements (heartbeats accumulate as referrers of the bundle
// they keep fresh) would be refused oci_too_many in every run, though the
// sync read 150 of its 100,000 fetches. Tags on one manifest are one
// listing: the bundle is planned (docs/SPEC-DECISIONS.md OCI-13, amended
// in review 36).
func TestOCISyncJunkTagsDoNotShrinkAGenuineBundlesShare(t *testing.T) {
	const junkTags, statements = 999, 150
	tags, manifests, digests := fakeBundles(2)
	victim := digests[1]
	junk := manifests[tags[0]]
	for i := range junkTags - 1 {
		tag := fmt.Sprint("junk", i)
		tags = append(tags, tag)
		manifests[tag] = junk
	}
	listing := junkReferrers(statements, "heartbeat ")
	ep, loc := manifestRegistry(t, tags, manifests, func(subject string) []byte {
		if subject == victim.String() {
			return referrersPage(listing...)
		}
		return referrersPage()
	}, new(atomic.Int64))
	rep, err := planOCISync(context.Background(), ep, loc, "*")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range rep.Entries {
		if e.Kind != ocitransport.KindBundle || e.art == nil || e.art.Descriptor.Digest != victim {
			continue
		}
		if e.Outcome != ociPlanned {
			t.Fatalf("%d junk tags on one referrer-less manifest: the genuine bundle with %d referrers is %s %s (%s); the sync fetched at most %d of its %d",
				junkTags, statements, e.Outcome, e.Error, e.Message, statements, ocitransport.MaxSyncStatements)
		}
		return
	}
	t.Fatal("the victim bundle is not in the report")
}

// floodedLayoutServer serves the layout dir as the registry repository
// amp/x, listing under each manifest digest of flooded the referrers it
// maps to (the others: none).
func floodedLayoutServer(t *testing.T, dir string, flooded map[digest.Digest][]ocispec.Descriptor) string {
	t.Helper()
	lr := &layoutRegistry{dir: dir, sent: map[string]int64{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if subject, ok := strings.CutPrefix(r.URL.Path, "/v2/amp/x/referrers/"); ok {
			w.Header().Set("Content-Type", ocispec.MediaTypeImageIndex)
			w.Write(referrersPage(flooded[digest.Digest(subject)]...))
			return
		}
		lr.serve(w, r)
	}))
	t.Cleanup(srv.Close)
	return "oci://" + strings.TrimPrefix(srv.URL, "http://") + "/amp/x"
}

// TestOCISyncReferrerFloodAtTheNewestVersionDoesNotChooseTheVersion: a
// bundle cut for its unread referrers (refused at plan time) dropped out
// of its bundle_id's candidates, and the next version down was installed
// in its place: whoever may push referrers at the genuine newest version
// (here more than MaxReferrers of them) chose which version lands on a
// store that does not hold it yet, the older one, its fixes missing. A cut
// version that is pulled and verifies holds back the older candidates of
// its bundle_id in that run (docs/SPEC-DECISIONS.md OCI-9, amended in
// review 36).
func TestOCISyncReferrerFloodAtTheNewestVersionDoesNotChooseTheVersion(t *testing.T) {
	dir, genuine := layoutOfTwoVersions(t)
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
		t.Fatalf("%d referrers pushed at the genuine version 2 cut it, and version %d of %s was installed in its place: the pusher chose the version",
			ocitransport.MaxReferrers+1, v, translateID)
	}
	if v1 := got["v1/bundle"]; v1.Outcome != ociRefused || v1.Error != string(ocitransport.ErrTooMany) {
		t.Fatalf("version 1, held back by the verified version 2: %+v", v1)
	}
}

// TestOCISyncForgedFloodedTagHoldsNothingBack: whoever may push tags and
// referrers adds a forged version 3 of the bundle_id (the genuine version
// 1 file under a version 3 annotation) and floods its referrers, so that
// it is cut. The cut candidate is pulled and fails verification
// (oci_annotation_mismatch): it holds nothing back, and the genuine
// version 2 is installed (docs/SPEC-DECISIONS.md OCI-9, amended in review
// 36).
func TestOCISyncForgedFloodedTagHoldsNothingBack(t *testing.T) {
	dir, _ := layoutOfTwoVersions(t)
	data := readAll(t, sampleFile("translate"))
	sum := sha256.Sum256(data)
	layer := ocispec.Descriptor{MediaType: ocitransport.MediaTypeBundleFile, Digest: digest.FromBytes(data), Size: int64(len(data))}
	forged := ocitransport.BundleManifest([]ocispec.Descriptor{layer}, int64(len(data)), sum[:], "", translateID, 3)
	addToLayout(t, dir, "v3", forged)
	repo := floodedLayoutServer(t, dir, map[digest.Digest][]ocispec.Descriptor{
		digest.FromBytes(forged): junkReferrers(ocitransport.MaxReferrers+1, "pushed at forged v3 "),
	})
	db := newStore(t)
	r := runCLI(t, nil, "sync", repo, "--plain-http", "--db", db, "--json")
	got := syncEntries(t, r)
	if v := installed(t, db, translateID); v != 2 {
		t.Fatalf("a forged, flooded version 3 held the genuine version 2 out (installed: %d)\n%s%s", v, r.stdout, r.stderr)
	}
	if v3 := got["v3/bundle"]; v3.Outcome != ociRefused || v3.Error != string(ocitransport.ErrAnnotation) {
		t.Fatalf("the forged version 3: %+v; want refused %s", v3, ocitransport.ErrAnnotation)
	}
}

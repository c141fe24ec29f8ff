package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/ocitransport"
)

// TestOCISyncOtherTagsReferrersDoNotSuppressARevocation: whoever may push
// referrers to the repository (a co-tenant, or the registry) lists, under
// each of 100 bundle tags of its own served before the victim's,
// MaxReferrers statement descriptors that cost no request (a media type
// that is not a manifest's: refused before any fetch). They are kept
// nowhere and spend no share of the run's MaxSyncStatements fetches, and
// each bundle's listing has its own share: the victim bundle's genuine
// revocation, listed right, is still planned with it
// (docs/SPEC-DECISIONS.md OCI-13, amended in review 30).
func TestOCISyncOtherTagsReferrersDoNotSuppressARevocation(t *testing.T) {
	const junkBundles = ocitransport.MaxSyncStatements / ocitransport.MaxReferrers
	tags, manifests, digests := fakeBundles(junkBundles + 1)
	victim := len(tags) - 1
	emptyJSON := []byte("{}")
	layer := []byte("a revocation")
	raw, _ := json.Marshal(ocispec.Manifest{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageManifest,
		ArtifactType: ocitransport.ArtifactTypeRevocation,
		Config:       ocispec.Descriptor{MediaType: ocitransport.MediaTypeEmptyConfig, Digest: digest.FromBytes(emptyJSON), Size: 2},
		Layers:       []ocispec.Descriptor{{MediaType: bundle.MediaTypeRevocation, Digest: digest.FromBytes(layer), Size: int64(len(layer))}},
		Subject:      &ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: digests[victim], Size: int64(len(manifests[tags[victim]]))}})
	revocation := digest.FromBytes(raw)
	manifests[revocation.String()] = raw
	right := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, ArtifactType: ocitransport.ArtifactTypeRevocation, Digest: revocation, Size: int64(len(raw))}
	bySubject := map[string]int{}
	for i, d := range digests {
		bySubject[d.String()] = i
	}
	ep, loc := manifestRegistry(t, tags, manifests, func(subject string) []byte {
		i, ok := bySubject[subject]
		if !ok {
			return nil
		}
		if i == victim {
			return referrersPage(right)
		}
		junk := make([]ocispec.Descriptor, ocitransport.MaxReferrers)
		for j := range junk {
			junk[j] = ocispec.Descriptor{MediaType: "application/vnd.test.junk", ArtifactType: ocitransport.ArtifactTypeRevocation,
				Digest: digest.FromString(fmt.Sprint(i, "/", j)), Size: 500}
		}
		return referrersPage(junk...)
	}, new(atomic.Int64))
	rep, err := planOCISync(context.Background(), ep, loc, "*")
	if err != nil {
		t.Fatal(err)
	}
	revoked, victimPlanned := false, false
	for _, e := range rep.Entries {
		if e.Kind == ocitransport.KindRevocation && e.Outcome == ociPlanned && e.art != nil && e.art.Descriptor.Digest == revocation {
			revoked = true
		}
		if e.Kind == ocitransport.KindBundle && e.Outcome == ociPlanned && e.art != nil && e.art.Descriptor.Digest == digests[victim] {
			victimPlanned = true
		}
	}
	if victimPlanned && !revoked {
		t.Fatalf("%d other bundle tags listing %d no-fetch referrers each: the victim bundle %s is planned but its own revocation, listed right, is not (skipped for the run's %d-statement bound)",
			junkBundles, ocitransport.MaxReferrers, tags[victim], ocitransport.MaxSyncStatements)
	}
}

// TestOCISyncShareOthersLeftUnusedReadsACutListing: 101 bundles give each
// listing a first share of 990 fetches; the victim lists 1,000 fresh
// referrers (a revocation could be any of the last ten) and the others
// none. Review 30 refused the victim oci_too_many, every run, though the
// sync fetched 1,000 of its 100,000: a listing over its first share is
// read in a second pass with what the first left, so every referrer is
// read and the bundle is planned (docs/SPEC-DECISIONS.md OCI-13, amended
// in review 36). A bundle whose referrers are still left unread is refused
// (TestOCISyncReferrerFloodOverMaxReferrersDoesNotInstallTheBundleUnread).
func TestOCISyncShareOthersLeftUnusedReadsACutListing(t *testing.T) {
	const n = ocitransport.MaxSyncStatements / 990
	tags, manifests, digests := fakeBundles(n)
	victim := n - 1
	flood := make([]ocispec.Descriptor, ocitransport.MaxReferrers)
	for j := range flood {
		flood[j] = ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, ArtifactType: ocitransport.ArtifactTypeRevocation,
			Digest: digest.FromString(fmt.Sprint("fresh", j)), Size: 500}
	}
	var missing atomic.Int64
	ep, loc := manifestRegistry(t, tags, manifests, func(subject string) []byte {
		if subject == digests[victim].String() {
			return referrersPage(flood...)
		}
		return referrersPage()
	}, &missing)
	rep, err := planOCISync(context.Background(), ep, loc, "*")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range rep.Entries {
		if e.Kind != ocitransport.KindBundle || e.art == nil || e.art.Descriptor.Digest != digests[victim] {
			continue
		}
		if e.Outcome != ociPlanned {
			t.Fatalf("a bundle with %d referrers, over its first share %d, the other %d bundles listing none: outcome %s %s (%s), want planned",
				ocitransport.MaxReferrers, ocitransport.MaxSyncStatements/n, n-1, e.Outcome, e.Error, e.Message)
		}
		if got := missing.Load(); got != ocitransport.MaxReferrers {
			t.Fatalf("%d manifest requests, want each of the %d referrers fetched once", got, ocitransport.MaxReferrers)
		}
		return
	}
	t.Fatal("the victim bundle is not in the report")
}

// TestOCISyncUnlistedSkipsAreCountedByName: past maxOCISkippedEntries the
// one entry that counts the skipped referrers counts them by error name,
// the most common first, and carries that name (not oci_too_many whatever
// they were).
func TestOCISyncUnlistedSkipsAreCountedByName(t *testing.T) {
	loc, err := ocitransport.ParseLocation("oci://registry.example/amp/x")
	if err != nil {
		t.Fatal(err)
	}
	w := unlistedEntry(loc, map[string]int{string(ocitransport.ErrNotFound): 7, string(ocitransport.ErrNotBundle): 900, string(ocitransport.ErrTooMany): 3})
	want := "910 more referrers skipped, not listed one by one: oci_not_an_ampbundle_artifact 900, " + string(ocitransport.ErrNotFound) + " 7, oci_too_many 3"
	if w == nil || w.Error != string(ocitransport.ErrNotBundle) || w.Message != want {
		t.Fatalf("the count entry: %+v; want error %s, message %q", w, ocitransport.ErrNotBundle, want)
	}
	if unlistedEntry(loc, map[string]int{}) != nil {
		t.Fatal("an entry counting no referrers")
	}
}

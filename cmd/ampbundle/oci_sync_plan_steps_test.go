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

// TestOCISyncPlanKeepsEveryStepAndItsOrder pins what planOCISync makes of
// a repository holding one of each kind of tag: a referrers tag (never
// listed), a manifest not of ours (skipped), a tag with no manifest
// (refused), a bundle whose bundle_id annotation is no bundle_id (refused
// before its referrers are read), a bundle whose referrers listing fails
// (refused, cut), statements tagged on their own and listed again as a
// bundle's referrers (planned once), a referrer that cannot be fetched
// (skipped) and the order of the report (what is not applied first, then
// what is, in the order it is applied: rotations, revocations, bundles,
// heartbeats). A plan step dropped, moved or run
// twice changes the report.
func TestOCISyncPlanKeepsEveryStepAndItsOrder(t *testing.T) {
	tags, manifests, digests := fakeBundles(3)
	names := map[string]string{}
	for i, d := range digests {
		names[d.String()] = fmt.Sprint("v", i)
	}
	statement := func(name, artifactType, layerType string, subject int) ocispec.Descriptor {
		layer := []byte(name)
		raw, _ := json.Marshal(ocispec.Manifest{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageManifest,
			ArtifactType: artifactType,
			Config:       ocispec.Descriptor{MediaType: ocitransport.MediaTypeEmptyConfig, Digest: digest.FromBytes([]byte("{}")), Size: 2},
			Layers:       []ocispec.Descriptor{{MediaType: layerType, Digest: digest.FromBytes(layer), Size: int64(len(layer))}},
			Subject:      &ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: digests[subject], Size: int64(len(manifests[tags[subject]]))}})
		d := digest.FromBytes(raw)
		manifests[d.String()] = raw
		names[d.String()] = name
		return ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, ArtifactType: artifactType, Digest: d, Size: int64(len(raw))}
	}
	rev := statement("rev", ocitransport.ArtifactTypeRevocation, bundle.MediaTypeRevocation, 1)
	rot := statement("rot", ocitransport.ArtifactTypeRotation, bundle.MediaTypeRotation, 2)
	hb := statement("hb", ocitransport.ArtifactTypeHeartbeat, bundle.MediaTypeHeartbeat, 1)
	missing := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, ArtifactType: ocitransport.ArtifactTypeRevocation,
		Digest: digest.FromString("missing"), Size: 500}
	manifests["rev"], manifests["rot"] = manifests[rev.Digest.String()], manifests[rot.Digest.String()]
	other, _ := json.Marshal(ocispec.Manifest{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageManifest,
		ArtifactType: "application/x.other",
		Config:       ocispec.Descriptor{MediaType: ocitransport.MediaTypeEmptyConfig, Digest: digest.FromBytes([]byte("{}")), Size: 2}})
	manifests["junk"], manifests[digest.FromBytes(other).String()] = other, other
	badSum := sha256.Sum256([]byte("badid"))
	manifests["badid"] = ocitransport.BundleManifest([]ocispec.Descriptor{{MediaType: ocitransport.MediaTypeBundleFile,
		Digest: digest.NewDigestFromBytes(digest.SHA256, badSum[:]), Size: 1000}}, 1000, badSum[:], "", "Not A Bundle ID!", 1)
	manifests[digest.FromBytes(manifests["badid"]).String()] = manifests["badid"]
	flood := make([]ocispec.Descriptor, ocitransport.MaxReferrers+1)
	for i := range flood {
		flood[i] = ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, ArtifactType: ocitransport.ArtifactTypeRevocation,
			Digest: digest.FromString(fmt.Sprint("flood", i)), Size: 500}
	}
	all := append(tags, "sha256-"+digests[1].Encoded(), "junk", "gone", "badid", "rev", "rot")
	var fetched atomic.Int64
	ep, loc := manifestRegistry(t, all, manifests, func(subject string) []byte {
		switch subject {
		case digests[0].String():
			return referrersPage(flood...)
		case digests[1].String():
			return referrersPage(missing, rev, hb)
		}
		return referrersPage()
	}, &fetched)
	for _, tc := range []struct{ pattern, want string }{
		{"*", `v0 bundle refused oci_too_many cut|` +
			`junk other skipped  |` +
			`gone unknown refused oci_not_found |` +
			`badid bundle refused oci_annotation_mismatch |` +
			`v1 referrers skipped oci_not_found |` +
			`rot trust planned  |` +
			`rev revocation planned  |` +
			`v1 bundle planned  |` +
			`v2 bundle planned  |` +
			`@hb heartbeat planned  `},
		{"v[01]", `v0 bundle refused oci_too_many cut|` +
			`v1 referrers skipped oci_not_found |` +
			`@rev revocation planned  |` +
			`v1 bundle planned  |` +
			`@hb heartbeat planned  `},
	} {
		rep, err := planOCISync(context.Background(), ep, loc, tc.pattern)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range rep.Entries {
			ref := strings.TrimPrefix(strings.TrimPrefix(e.Ref, loc.String()), ":")
			if strings.HasPrefix(ref, "@") {
				ref = "@" + names[strings.TrimPrefix(ref, "@")]
			}
			cut := ""
			if e.cut {
				cut = "cut"
			}
			got = append(got, fmt.Sprintf("%s %s %s %s %s", ref, e.Kind, e.Outcome, e.Error, cut))
			if ref == "badid" && !strings.Contains(e.Message, "bundle_id annotation is not a bundle_id") {
				t.Errorf("badid refused as %q, want its annotation refused before its referrers are read", e.Message)
			}
		}
		if g := strings.Join(got, "|"); g != tc.want {
			t.Errorf("pattern %q: plan\n%s\nwant\n%s", tc.pattern, strings.ReplaceAll(g, "|", "\n"), strings.ReplaceAll(tc.want, "|", "\n"))
		}
	}
}

// TestOCISyncPlanFailsWhenTheTagsCannotBeListed: a registry that does not
// list its tags plans nothing: the sync fails with the listing's error.
func TestOCISyncPlanFailsWhenTheTagsCannotBeListed(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v2/" {
			return
		}
		http.Error(w, "no", http.StatusForbidden)
	}))
	t.Cleanup(srv.Close)
	loc, err := ocitransport.ParseLocation("oci://" + strings.TrimPrefix(srv.URL, "http://") + "/amp/x")
	if err != nil {
		t.Fatal(err)
	}
	ep, err := ocitransport.Open(context.Background(), loc, ocitransport.Options{PlainHTTP: true}, ocitransport.ReadOnly)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ep.Close() })
	rep, err := planOCISync(context.Background(), ep, loc, "*")
	if rep != nil || errName(err) != "oci_registry_error" {
		t.Fatalf("plan %v, error %v (%s), want no plan and oci_registry_error", rep, err, errName(err))
	}
}

// TestOCISyncSecondPassReadsTheFewestFirst: of the listings left for the
// second pass (over their first share), the one that needs the fewest
// fetches is read first, whatever the tags' order, so what it leaves
// unused is shared by those after it (docs/SPEC-DECISIONS.md OCI-13,
// amended in review 36): its skipped referrers are reported first.
func TestOCISyncSecondPassReadsTheFewestFirst(t *testing.T) {
	const n = ocitransport.MaxSyncStatements/ocitransport.MaxReferrers + 1 // a first share under MaxReferrers
	tags, manifests, digests := fakeBundles(n)
	listing := func(name string, k int) []byte {
		descs := make([]ocispec.Descriptor, k)
		for j := range descs {
			descs[j] = ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, ArtifactType: ocitransport.ArtifactTypeRevocation,
				Digest: digest.FromString(fmt.Sprint(name, j)), Size: 500}
		}
		return referrersPage(descs...)
	}
	most, fewer := listing("most", ocitransport.MaxReferrers), listing("fewer", ocitransport.MaxReferrers-5)
	ep, loc := manifestRegistry(t, tags, manifests, func(subject string) []byte {
		switch subject {
		case digests[0].String():
			return most
		case digests[1].String():
			return fewer
		}
		return referrersPage()
	}, new(atomic.Int64))
	rep, err := planOCISync(context.Background(), ep, loc, "*")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range rep.Entries {
		if e.Kind == "referrers" {
			if want := loc.WithReference(tags[1]).String(); e.Ref != want {
				t.Fatalf("the first skipped referrer is %s's, want %s's (the listing needing the fewest fetches read first)", e.Ref, want)
			}
			return
		}
	}
	t.Fatal("no referrer skipped")
}

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

// TestOCISyncFetchesARepeatedReferrerOncePerSync: a hostile registry lists
// the same MaxReferrers statement descriptors under every bundle tag (a
// referrers listing is the registry's to write, whatever the subject). A
// referrer digest is fetched, and its failure reported, once per sync, not
// once per bundle listing it (with MaxTags bundle tags that would be up to
// 10,000 x 1,000 manifest requests and report entries); the report lists
// at most maxOCISkippedEntries skipped referrers, then one entry counting
// the rest (docs/SPEC-DECISIONS.md OCI-13, amended).
func TestOCISyncFetchesARepeatedReferrerOncePerSync(t *testing.T) {
	const bundles, referrers = 8, ocitransport.MaxReferrers
	tags, manifests, _ := fakeBundles(bundles)
	var listed []ocispec.Descriptor
	for i := range referrers {
		listed = append(listed, ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, ArtifactType: ocitransport.ArtifactTypeRevocation,
			Digest: digest.FromString(fmt.Sprint("statement", i)), Size: 500})
	}
	page := referrersPage(listed...)
	var fetched atomic.Int64
	ep, loc := manifestRegistry(t, tags, manifests, func(string) []byte { return page }, &fetched)
	rep, err := planOCISync(context.Background(), ep, loc, "*")
	if err != nil {
		t.Fatal(err)
	}
	skipped, summary := 0, ""
	for _, e := range rep.Entries {
		if e.Kind == "referrers" {
			skipped++
			summary = e.Message
		}
	}
	if fetched.Load() > referrers {
		t.Fatalf("%d bundle tags listing the same %d referrers: %d referrer manifest requests (want each fetched once per sync: at most %d)",
			bundles, referrers, fetched.Load(), referrers)
	}
	if skipped != maxOCISkippedEntries+1 {
		t.Fatalf("%d failing referrers: %d skipped report entries, want %d listed and one counting the rest", referrers, skipped, maxOCISkippedEntries)
	}
	if want := fmt.Sprintf("%d more referrers skipped", referrers-maxOCISkippedEntries); !strings.HasPrefix(summary, want) {
		t.Fatalf("the last skipped entry says %q, want it to count the rest (%q)", summary, want)
	}
}

// TestOCISyncMisdescribedReferrerDoesNotHideIt: what one sync learns of a
// statement manifest is shared by every bundle's listing, but a listing
// that misdescribes a digest (another size) must not decide for the
// listing that describes it right: a revocation listed first under another
// bundle with a wrong size (its fetch refused) is still fetched, and
// planned, under its own bundle (docs/SPEC-DECISIONS.md OCI-13, amended).
func TestOCISyncMisdescribedReferrerDoesNotHideIt(t *testing.T) {
	tags, manifests, digests := fakeBundles(2)
	emptyJSON := []byte("{}")
	layer := []byte("a revocation")
	raw, _ := json.Marshal(ocispec.Manifest{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageManifest,
		ArtifactType: ocitransport.ArtifactTypeRevocation,
		Config:       ocispec.Descriptor{MediaType: ocitransport.MediaTypeEmptyConfig, Digest: digest.FromBytes(emptyJSON), Size: 2},
		Layers:       []ocispec.Descriptor{{MediaType: bundle.MediaTypeRevocation, Digest: digest.FromBytes(layer), Size: int64(len(layer))}},
		Subject:      &ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: digests[1], Size: int64(len(manifests[tags[1]]))}})
	revocation := digest.FromBytes(raw)
	manifests[revocation.String()] = raw
	right := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, ArtifactType: ocitransport.ArtifactTypeRevocation, Digest: revocation, Size: int64(len(raw))}
	wrong := right
	wrong.Size++
	ep, loc := manifestRegistry(t, tags, manifests, func(subject string) []byte {
		if subject == digests[0].String() {
			return referrersPage(wrong) // listed first, misdescribed
		}
		return referrersPage(right)
	}, new(atomic.Int64))
	rep, err := planOCISync(context.Background(), ep, loc, "*")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range rep.Entries {
		if e.Kind == ocitransport.KindRevocation && e.Outcome == ociPlanned {
			return
		}
	}
	var got []string
	for _, e := range rep.Entries {
		got = append(got, fmt.Sprintf("%s %s %s", e.Kind, e.Outcome, e.Error))
	}
	t.Fatalf("the revocation listed right under its bundle was not planned, after a listing that misdescribed it: %q", got)
}

// fakeBundles returns n bundle tags (v0, v1, …), their manifests by tag
// and by digest, and their digests; no file is behind them.
func fakeBundles(n int) (tags []string, manifests map[string][]byte, digests []digest.Digest) {
	manifests = map[string][]byte{}
	for i := range n {
		sum := sha256.Sum256([]byte(fmt.Sprint("file", i)))
		layer := ocispec.Descriptor{MediaType: ocitransport.MediaTypeBundleFile, Digest: digest.NewDigestFromBytes(digest.SHA256, sum[:]), Size: 1000}
		raw := ocitransport.BundleManifest([]ocispec.Descriptor{layer}, 1000, sum[:], "", "", 0)
		tag := fmt.Sprint("v", i)
		tags = append(tags, tag)
		manifests[tag] = raw
		manifests[digest.FromBytes(raw).String()] = raw
		digests = append(digests, digest.FromBytes(raw))
	}
	return tags, manifests, digests
}

// referrersPage is a referrers API answer listing descs.
func referrersPage(descs ...ocispec.Descriptor) []byte {
	page, _ := json.Marshal(ocispec.Index{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageIndex, Manifests: descs})
	return page
}

// manifestRegistry serves the repository amp/x in plain HTTP and opens it:
// the tags, the manifests by tag or digest, and the referrers listing of
// each subject digest pages gives (none when it returns nil). missing
// counts the manifest requests answered 404.
func manifestRegistry(t *testing.T, tags []string, manifests map[string][]byte, pages func(subject string) []byte, missing *atomic.Int64) (*ocitransport.Endpoint, ocitransport.Location) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		const repo = "/v2/amp/x/"
		p := r.URL.Path
		switch {
		case p == "/v2/":
		case p == repo+"tags/list":
			json.NewEncoder(w).Encode(map[string]any{"name": "amp/x", "tags": tags})
		case pages != nil && strings.HasPrefix(p, repo+"referrers/"):
			page := pages(strings.TrimPrefix(p, repo+"referrers/"))
			if page == nil {
				http.NotFound(w, r)
				return
			}
			w.Header().Set("Content-Type", ocispec.MediaTypeImageIndex)
			w.Write(page)
		case strings.HasPrefix(p, repo+"manifests/"):
			raw, ok := manifests[strings.TrimPrefix(p, repo+"manifests/")]
			if !ok {
				missing.Add(1)
				http.NotFound(w, r)
				return
			}
			w.Header().Set("Content-Type", ocispec.MediaTypeImageManifest)
			w.Header().Set("Docker-Content-Digest", digest.FromBytes(raw).String())
			w.Header().Set("Content-Length", fmt.Sprint(len(raw)))
			if r.Method == http.MethodGet {
				w.Write(raw)
			}
		default:
			http.NotFound(w, r)
		}
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
	return ep, loc
}

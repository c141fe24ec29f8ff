package ocitransport

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// cacheEntryStringBudget is what the strings of one StatementCache entry
// may cost (its whole entry: statementEntryBytes). A valid sha256 digest
// string is 71 bytes.
const cacheEntryStringBudget = 512

// cacheRetainedStrings estimates the bytes a StatementCache keeps for its
// entries beyond fixed-size fields: the key's digest string, the Trimmed
// artifact's strings and the refusal's message.
func cacheRetainedStrings(c *StatementCache) (total int, worst int) {
	for k, cs := range c.m {
		n := len(k.digest)
		if cs.a != nil {
			a := cs.a
			n += len(a.BundleID) + len(a.Kind) + len(a.FileSHA256) + len(a.Descriptor.MediaType) + len(a.Descriptor.Digest) + len(a.Descriptor.ArtifactType) +
				len(a.Manifest.MediaType) + len(a.Manifest.ArtifactType) + len(a.Raw)
			for _, l := range a.Manifest.Layers {
				n += len(l.MediaType) + len(l.Digest)
			}
			if a.Manifest.Subject != nil {
				n += len(a.Manifest.Subject.MediaType) + len(a.Manifest.Subject.Digest)
			}
			for k, v := range a.Manifest.Annotations {
				n += len(k) + len(v)
			}
		}
		if cs.err != nil {
			n += len(cs.err.Error())
		}
		total += n
		worst = max(worst, n)
	}
	return total, worst
}

// cacheTestRegistry serves amp/x in plain HTTP: the referrers listing of
// each subject (pages), and the manifests by digest; it returns the
// endpoint opened on it.
func cacheTestRegistry(t *testing.T, pages func(subject string) []byte, manifests map[string][]byte) *Endpoint {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		const repo = "/v2/amp/x/"
		p := r.URL.Path
		switch {
		case p == "/v2/":
		case strings.HasPrefix(p, repo+"referrers/"):
			w.Header().Set("Content-Type", ocispec.MediaTypeImageIndex)
			w.Write(pages(strings.TrimPrefix(p, repo+"referrers/")))
		case strings.HasPrefix(p, repo+"manifests/"):
			raw, ok := manifests[strings.TrimPrefix(p, repo+"manifests/")]
			if !ok {
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
	loc, err := ParseLocation("oci://" + strings.TrimPrefix(srv.URL, "http://") + "/amp/x")
	if err != nil {
		t.Fatal(err)
	}
	ep, err := Open(context.Background(), loc, Options{PlainHTTP: true}, ReadOnly)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ep.Close() })
	return ep
}

// cacheTestPage is a referrers API answer listing descs.
func cacheTestPage(descs ...ocispec.Descriptor) []byte {
	page, _ := json.Marshal(ocispec.Index{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageIndex, Manifests: descs})
	return page
}

// cacheTestSubject is the descriptor of bundle i (no manifest behind it:
// only its referrers listing is read).
func cacheTestSubject(i int) *Artifact {
	return &Artifact{Descriptor: ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: digest.FromString(fmt.Sprint("bundle", i)), Size: 1000}, Kind: KindBundle}
}

// TestStatementCacheKeepsNoRegistryChosenDigestString: a hostile
// registry lists, under each bundle tag, statement descriptors
// (artifactType a statement's) whose "digest" is ~40 KiB of junk, ten to a
// page. Each is refused before the cache (checkManifestDescriptor: not a
// valid sha256 digest), without a request, and kept nowhere: were it kept
// under its raw digest, MaxSyncStatements entries of up to ~512 KiB each
// would be tens of GiB where an entry is bounded at a few hundred bytes of
// strings (docs/SPEC-DECISIONS.md OCI-13, amended in review 30).
func TestStatementCacheKeepsNoRegistryChosenDigestString(t *testing.T) {
	const bundles, perPage, junk = 20, 10, 40 << 10
	ep := cacheTestRegistry(t, func(subject string) []byte {
		var descs []ocispec.Descriptor
		for i := range perPage {
			d := digest.Digest(fmt.Sprintf("sha256:%s-%d-%s", subject, i, strings.Repeat("z", junk)))
			descs = append(descs, ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, ArtifactType: ArtifactTypeRevocation, Digest: d, Size: 500})
		}
		return cacheTestPage(descs...)
	}, nil)
	cache := &StatementCache{}
	for i := range bundles {
		if _, _, err := ep.StatementsCached(context.Background(), cacheTestSubject(i), cache); err != nil {
			t.Fatalf("listing %d: %v", i, err)
		}
	}
	total, worst := cacheRetainedStrings(cache)
	if worst > cacheEntryStringBudget {
		t.Fatalf("%d listings of %d junk-digest referrers: the sync's statement cache keeps %d entries, %d bytes (worst entry %d bytes, budget %d): "+
			"at MaxSyncStatements (%d) entries a registry makes one sync hold ~%d MiB of strings of its choosing",
			bundles, perPage, len(cache.m), total, worst, cacheEntryStringBudget, MaxSyncStatements, int64(worst)*MaxSyncStatements>>20)
	}
}

// TestStatementCacheKeepsNoBundleReferrersBundleID: a hostile registry
// lists, as a statement referrer (artifactType a revocation's), a bundle's
// manifest whose bundle_id annotation fills the 16 KiB a statement
// manifest may have. It is skipped, and the cache keeps only its error:
// were it to keep the artifact with its bundle_id, each such manifest (up
// to MaxSyncStatements) would keep ~16 KiB, ~1.5 GiB a sync. Trimmed keeps
// a bundle_id only when bundle.ValidateBundleID accepts it
// (docs/SPEC-DECISIONS.md OCI-13, amended in review 30).
func TestStatementCacheKeepsNoBundleReferrersBundleID(t *testing.T) {
	const bundles = 20
	manifests := map[string][]byte{}
	var listed []ocispec.Descriptor
	for i := range bundles {
		sum := sha256.Sum256([]byte(fmt.Sprint("file", i)))
		layer := ocispec.Descriptor{MediaType: MediaTypeBundleFile, Digest: digest.NewDigestFromBytes(digest.SHA256, sum[:]), Size: 1000}
		id := fmt.Sprintf("%d%s", i, strings.Repeat("b", 15<<10))
		raw := BundleManifest([]ocispec.Descriptor{layer}, 1000, sum[:], "", id, 1)
		if len(raw) > MaxStatementManifestSize {
			t.Fatalf("test setup: a %d-byte manifest is over the statement manifest bound", len(raw))
		}
		manifests[digest.FromBytes(raw).String()] = raw
		listed = append(listed, ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, ArtifactType: ArtifactTypeRevocation, Digest: digest.FromBytes(raw), Size: int64(len(raw))})
	}
	page := cacheTestPage(listed...)
	ep := cacheTestRegistry(t, func(string) []byte { return page }, manifests)
	cache := &StatementCache{}
	_, skipped, err := ep.StatementsCached(context.Background(), cacheTestSubject(0), cache)
	if err != nil {
		t.Fatal(err)
	}
	if len(skipped) != bundles {
		t.Fatalf("test setup: %d referrers that are bundles, %d skipped (%v)", bundles, len(skipped), skipped)
	}
	total, worst := cacheRetainedStrings(cache)
	if worst > cacheEntryStringBudget {
		t.Fatalf("%d bundle manifests listed as statements: the sync's statement cache keeps %d bytes (worst entry %d bytes, budget %d): "+
			"at MaxSyncStatements (%d) entries a registry makes one sync hold ~%d MiB of bundle_id annotations",
			bundles, total, worst, cacheEntryStringBudget, MaxSyncStatements, int64(worst)*MaxSyncStatements>>20)
	}
}

// TestStatementCacheEntryIsBounded: what one entry of the cache holds,
// measured on the heap, is at most statementEntryBytes whatever a
// registry chose within the checks: the longest digests a statement
// manifest may carry (a sha512 subject), a refusal whose cause holds 8 KiB
// of a registry's error text (only its name and message are kept). A full
// cache (MaxSyncStatements entries) is then at most ~150 MiB.
func TestStatementCacheEntryIsBounded(t *testing.T) {
	const n = 2000
	layer := []byte("a revocation statement")
	raws := make([][]byte, n)
	for i := range raws {
		sub := digest.SHA512.FromString(fmt.Sprint("subject", i))
		raw, _ := json.Marshal(ocispec.Manifest{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageManifest,
			ArtifactType: ArtifactTypeRevocation, Config: ocispec.Descriptor{MediaType: MediaTypeEmptyConfig, Digest: emptyConfig.Digest, Size: 2},
			Layers:      []ocispec.Descriptor{{MediaType: layerTypeOf(KindRevocation), Digest: digest.FromBytes(layer), Size: int64(len(layer))}},
			Subject:     &ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: sub, Size: 1000},
			Annotations: map[string]string{"padding": strings.Repeat("p", 4<<10)}})
		raws[i] = raw
	}
	for _, refused := range []bool{false, true} {
		c := &StatementCache{}
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for i, raw := range raws {
			d := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, ArtifactType: ArtifactTypeRevocation, Digest: digest.FromBytes(raw), Size: int64(len(raw))}
			if refused {
				cause := fmt.Errorf("registry says %d: %s", i, strings.Repeat("e", 8<<10))
				c.keep(keyOf(d), nil, fail(ErrRegistry, "fetching a blob failed").WithCause(cause))
				continue
			}
			a, err := DecodeManifest(raw, d, 0)
			if err != nil {
				t.Fatalf("test setup: %v", err)
			}
			c.keep(keyOf(d), a, nil)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		runtime.KeepAlive(raws)
		runtime.KeepAlive(c)
		per := (int64(after.HeapAlloc) - int64(before.HeapAlloc)) / n
		if per > statementEntryBytes {
			t.Fatalf("a statement cache entry (refused: %v) holds %d bytes on the heap, over statementEntryBytes (%d): a full cache would hold %d MiB",
				refused, per, statementEntryBytes, per*MaxSyncStatements>>20)
		}
		t.Logf("refused %v: %d bytes an entry", refused, per)
	}
}

// layerTypeOf is the layer media type of the statement kind.
func layerTypeOf(kind string) string {
	for _, s := range statementTypes {
		if s.kind == kind {
			return s.layerType
		}
	}
	return ""
}

// TestTrimmedKeepsOnlyAValidBundleID: Trimmed keeps a bundle_id hint only
// when bundle.ValidateBundleID accepts it (at most 255 bytes): a plan or a
// cache keeping many artifacts keeps no annotation of a registry's size.
func TestTrimmedKeepsOnlyAValidBundleID(t *testing.T) {
	for _, tc := range []struct{ id, want string }{
		{"com.example.translate", "com.example.translate"},
		{strings.Repeat("b", 15<<10), ""},
		{"com." + strings.Repeat("b", 300), ""},
		{"", ""},
	} {
		a := &Artifact{Kind: KindBundle, BundleID: tc.id, Version: 3}
		if got := a.Trimmed(); got.BundleID != tc.want || got.Version != 3 {
			t.Fatalf("Trimmed of a bundle_id of %d bytes kept %d bytes (want %d)", len(tc.id), len(got.BundleID), len(tc.want))
		}
	}
}

package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/ampbundle/ampbundle/ocitransport"
)

// TestOCISyncPlanHoldsNoManifest: planOCISync resolves every tag before it
// applies any. A hostile registry lists up to MaxTags (10,000) tags, each a
// distinct bundle manifest of nearly MaxManifestSize (4 MiB), the bulk in
// an annotation no one reads, or in the bundle_id hint: were each plan
// entry to keep the manifest (raw and decoded), the plan would hold about
// 80 GB before the first pull. A plan keeps of a tag its descriptor, its
// file key (hashed) and bounded hints, and reads the manifest again to
// pull it; a bundle_id hint that is no bundle_id is refused at once
// (oci_annotation_mismatch, as a pull would find). 16 tags of 3.5 MiB
// manifests must leave the plan holding far less than their 56 MiB
// (docs/SPEC-DECISIONS.md OCI-10, amended).
func TestOCISyncPlanHoldsNoManifest(t *testing.T) {
	for _, tc := range []struct {
		name, key string
		refused   bool
	}{
		{"padded foreign annotation", "org.example.pad", false},
		{"padded bundle_id hint", ocitransport.AnnotationBundleID, true},
	} {
		t.Run(tc.name, func(t *testing.T) { planOfPaddedManifests(t, tc.key, tc.refused) })
	}
}

// planOfPaddedManifests plans a sync of 16 bundle tags whose manifests are
// padded to 3.5 MiB in the annotation key, and checks what the plan holds.
func planOfPaddedManifests(t *testing.T, key string, refused bool) {
	const tags, pad = 16, 3<<20 + 512<<10
	manifests := map[string][]byte{}
	var names []string
	for i := range tags {
		sum := sha256.Sum256([]byte(fmt.Sprint("file", i)))
		layer := ocispec.Descriptor{MediaType: ocitransport.MediaTypeBundleFile, Digest: digest.NewDigestFromBytes(digest.SHA256, sum[:]), Size: 1000}
		var m ocispec.Manifest
		if err := json.Unmarshal(ocitransport.BundleManifest([]ocispec.Descriptor{layer}, 1000, sum[:], "", "", 0), &m); err != nil {
			t.Fatal(err)
		}
		m.Annotations[key] = strings.Repeat(string(rune('a'+i%26)), pad)
		raw, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ocitransport.DecodeManifest(raw, ocispec.Descriptor{}, 0); err != nil {
			t.Fatalf("the padded manifest is not one of ours: %v", err)
		}
		tag := fmt.Sprint("v", i)
		names = append(names, tag)
		manifests[tag] = raw
		manifests[digest.FromBytes(raw).String()] = raw
	}
	ep, loc := manifestRegistry(t, names, manifests, nil, new(atomic.Int64))
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	rep, err := planOCISync(context.Background(), ep, loc, "*")
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	held := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	planned, refusedN := 0, 0
	for _, e := range rep.Entries {
		switch {
		case e.Kind == ocitransport.KindBundle && e.Outcome == ociPlanned:
			planned++
		case e.Kind == ocitransport.KindBundle && e.Outcome == ociRefused && e.Error == string(ocitransport.ErrAnnotation):
			refusedN++
		}
	}
	runtime.KeepAlive(rep)
	if held > 8<<20 {
		t.Fatalf("a plan of %d bundle tags with %d-byte manifests holds %d MiB (%d planned); want a few bytes a tag", tags, pad, held>>20, planned)
	}
	if want := map[bool][2]int{false: {tags, 0}, true: {0, tags}}[refused]; planned != want[0] || refusedN != want[1] {
		t.Fatalf("%d tags: %d planned, %d refused as %s; want %d and %d", tags, planned, refusedN, ocitransport.ErrAnnotation, want[0], want[1])
	}
}

// TestOCISyncPullRefusesAManifestChangedSincePlan: the plan keeps a bundle's
// descriptor, not its manifest, and reads the manifest again to pull the
// file. A registry that answers other bytes the second time, under the
// same digest, is refused (oci_digest_mismatch): the manifest pulled is
// the one planned, byte for byte, and nothing lands.
func TestOCISyncPullRefusesAManifestChangedSincePlan(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "layout")
	mustRun(t, "push", sampleFile("translate"), "oci-layout:"+dir+":v1")
	lr := &layoutRegistry{dir: dir, sent: map[string]int64{}}
	var byDigest atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ref, ok := strings.CutPrefix(r.URL.Path, "/v2/amp/x/manifests/sha256:")
		if !ok || r.Method != http.MethodGet || byDigest.Add(1) == 1 {
			lr.serve(w, r)
			return
		}
		raw, err := os.ReadFile(filepath.Join(dir, "blobs", "sha256", filepath.Base(ref)))
		if err != nil {
			http.NotFound(w, r)
			return
		}
		raw = bytes.Replace(raw, []byte(`"schemaVersion":2`), []byte(`"schemaVersion":3`), 1) // same length, another digest
		w.Header().Set("Content-Type", ocispec.MediaTypeImageManifest)
		w.Header().Set("Docker-Content-Digest", "sha256:"+filepath.Base(ref))
		w.Header().Set("Content-Length", fmt.Sprint(len(raw)))
		w.Write(raw)
	}))
	defer srv.Close()

	db := newStore(t)
	r := runCLI(t, nil, "sync", "oci://"+strings.TrimPrefix(srv.URL, "http://")+"/amp/x", "--plain-http", "--db", db, "--json")
	if v := installed(t, db, translateID); v != 0 {
		t.Fatalf("version %d installed from a manifest that changed between plan and pull\n%s%s", v, r.stdout, r.stderr)
	}
	if byDigest.Load() != 2 {
		t.Fatalf("the manifest was read by its digest %d times, want 2 (the plan, the pull)\n%s", byDigest.Load(), r.stdout)
	}
	if e := syncEntries(t, r)["v1/bundle"]; e.Outcome != ociRefused || e.Error != string(ocitransport.ErrDigest) {
		t.Fatalf("the tag whose manifest changed: %s %s, want refused %s\n%s", e.Outcome, e.Error, ocitransport.ErrDigest, r.stdout)
	}
}

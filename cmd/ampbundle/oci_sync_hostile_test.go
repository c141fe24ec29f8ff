package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/ampbundle/ampbundle/ocitransport"
)

// layoutRegistry serves the layout folder dir as the registry repository
// amp/x (tags from index.json; no referrers) and counts the bytes of each
// blob it sends.
type layoutRegistry struct {
	dir  string
	mu   sync.Mutex
	sent map[string]int64
}

func (l *layoutRegistry) serve(w http.ResponseWriter, r *http.Request) {
	const repo = "/v2/amp/x/"
	p := r.URL.Path
	var idx ocispec.Index
	raw, _ := os.ReadFile(filepath.Join(l.dir, "index.json"))
	json.Unmarshal(raw, &idx)
	switch {
	case p == "/v2/":
	case p == repo+"tags/list":
		var tags []string
		for _, m := range idx.Manifests {
			if t := m.Annotations[ocispec.AnnotationRefName]; t != "" {
				tags = append(tags, t)
			}
		}
		json.NewEncoder(w).Encode(map[string]any{"name": "amp/x", "tags": tags})
	case strings.HasPrefix(p, repo+"manifests/"):
		ref := strings.TrimPrefix(p, repo+"manifests/")
		for _, m := range idx.Manifests {
			if m.Annotations[ocispec.AnnotationRefName] == ref || m.Digest.String() == ref {
				body, _ := os.ReadFile(filepath.Join(l.dir, "blobs", "sha256", m.Digest.Encoded()))
				w.Header().Set("Content-Type", ocispec.MediaTypeImageManifest)
				w.Header().Set("Docker-Content-Digest", m.Digest.String())
				w.Header().Set("Content-Length", fmt.Sprint(len(body)))
				if r.Method == http.MethodGet {
					w.Write(body)
				}
				return
			}
		}
		http.NotFound(w, r)
	case strings.HasPrefix(p, repo+"blobs/sha256:"):
		d := strings.TrimPrefix(p, repo+"blobs/sha256:")
		body, err := os.ReadFile(filepath.Join(l.dir, "blobs", "sha256", filepath.Base(d)))
		if err != nil {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Length", fmt.Sprint(len(body)))
		if r.Method == http.MethodGet {
			n, _ := w.Write(body)
			l.mu.Lock()
			l.sent[d] += int64(n)
			l.mu.Unlock()
		}
	default:
		http.NotFound(w, r) // the referrers API and the referrers tag schema: none
	}
}

// TestHostileOCISyncForgedCandidatesSharingOneLayerAreEachDownloaded: one
// who may push tags adds N forged candidates of a bundle_id (versions
// 99..99-N+1, above the genuine one) whose manifests all list ONE large
// layer. Were each pulled whole before it is refused, one stored blob
// would cost N full downloads per sync; with a 4 GiB layer (the default
// --max-blob-size) and the 10-minute default --timeout, a handful would
// keep the genuine version out of every sync. A file already refused in
// this sync (same layer digests, same file SHA-256) is not pulled again
// (docs/SPEC-DECISIONS.md OCI-16).
func TestHostileOCISyncForgedCandidatesSharingOneLayerAreEachDownloaded(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "layout")
	mustRun(t, "push", sampleFile("translate"), "oci-layout:"+dir+":v1")
	mustRun(t, "push", translateVersion(t, 2), "oci-layout:"+dir+":v2")
	filler := bytes.Repeat([]byte("forged bundle bytes "), (2<<20)/20) // 2 MiB stands for 4 GiB
	fd := digest.FromBytes(filler)
	if err := os.WriteFile(filepath.Join(dir, "blobs", "sha256", fd.Encoded()), filler, 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(filler)
	layer := ocispec.Descriptor{MediaType: ocitransport.MediaTypeBundleFile, Digest: fd, Size: int64(len(filler))}
	const forged = 6
	for i := range forged {
		addToLayout(t, dir, fmt.Sprintf("zz-forged-%d", i), ocitransport.BundleManifest([]ocispec.Descriptor{layer}, int64(len(filler)), sum[:], "", translateID, uint64(99-i)))
	}
	lr := &layoutRegistry{dir: dir, sent: map[string]int64{}}
	srv := httptest.NewServer(http.HandlerFunc(lr.serve))
	defer srv.Close()

	db := newStore(t)
	r := runCLI(t, nil, "sync", "oci://"+strings.TrimPrefix(srv.URL, "http://")+"/amp/x", "--plain-http", "--db", db, "--json")
	if v := installed(t, db, translateID); v != 2 {
		t.Fatalf("the genuine version 2 was not installed (installed: %d)\n%s%s", v, r.stdout, r.stderr)
	}
	lr.mu.Lock()
	sent := lr.sent[fd.Encoded()]
	lr.mu.Unlock()
	if sent > int64(len(filler)) {
		t.Fatalf("%d forged tags sharing one %d-byte layer made sync download %d bytes of it (%.0f times): each forged candidate is pulled whole",
			forged, len(filler), sent, float64(sent)/float64(len(filler)))
	}
}

// TestHostileOCISyncForgedCandidatesOfTheGenuineFileKeepItIn: forged
// candidates whose manifests list the genuine version's own layer under a
// higher version annotation are refused (oci_annotation_mismatch) from
// what the first pull learnt of the file, not pulled again; the genuine
// version is still imported, its file pulled at most twice in all
// (docs/SPEC-DECISIONS.md OCI-16).
func TestHostileOCISyncForgedCandidatesOfTheGenuineFileKeepItIn(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "layout")
	mustRun(t, "push", sampleFile("translate"), "oci-layout:"+dir+":v1")
	mustRun(t, "push", translateVersion(t, 2), "oci-layout:"+dir+":v2")
	loc, err := ocitransport.ParseLocation("oci-layout:" + dir)
	if err != nil {
		t.Fatal(err)
	}
	ep, err := ocitransport.Open(t.Context(), loc, ocitransport.Options{}, ocitransport.ReadOnly)
	if err != nil {
		t.Fatal(err)
	}
	genuine, err := ep.Resolve(t.Context(), "v2")
	ep.Close()
	if err != nil {
		t.Fatal(err)
	}
	const forged = 6
	for i := range forged {
		addToLayout(t, dir, fmt.Sprintf("zz-forged-%d", i), ocitransport.BundleManifest(genuine.Manifest.Layers, genuine.FileSize, genuine.FileSHA256, "", translateID, uint64(99-i)))
	}
	lr := &layoutRegistry{dir: dir, sent: map[string]int64{}}
	srv := httptest.NewServer(http.HandlerFunc(lr.serve))
	defer srv.Close()

	db := newStore(t)
	r := runCLI(t, nil, "sync", "oci://"+strings.TrimPrefix(srv.URL, "http://")+"/amp/x", "--plain-http", "--db", db, "--json")
	if v := installed(t, db, translateID); v != 2 {
		t.Fatalf("the genuine version 2 was not installed (installed: %d)\n%s%s", v, r.stdout, r.stderr)
	}
	if n := strings.Count(r.stdout, string(ocitransport.ErrAnnotation)); n != forged {
		t.Fatalf("%d of %d forged candidates refused as %s:\n%s", n, forged, ocitransport.ErrAnnotation, r.stdout)
	}
	lr.mu.Lock()
	sent := lr.sent[genuine.Manifest.Layers[0].Digest.Encoded()]
	lr.mu.Unlock()
	if sent > 2*genuine.FileSize {
		t.Fatalf("%d forged tags of the genuine %d-byte file made sync download %d bytes of it", forged, genuine.FileSize, sent)
	}
}

package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/ampbundle/ampbundle/internal/cliutil"
	"github.com/ampbundle/ampbundle/ocitransport"
	"github.com/ampbundle/ampbundle/resolver"
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
	dir, genuine := layoutOfTwoVersions(t)
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

// TestHostileOCISyncForgedLayerSizesDoNotKeepGenuineOut: OCI-16 remembers
// a file's refusal by a key of what the pull depends on; a pull depends on
// each layer's SIZE too, which the manifest (attacker-written) sets, so
// the key must hold it. One who may push a tag lists the
// genuine version's own layers with their sizes shifted by one byte (the
// sum unchanged, so the manifest checks pass) under a higher version
// annotation: sync tries it first and its pull fails on the size; were
// the sizes not in the key, the refusal would be remembered under the
// genuine file's key and the genuine candidate refused "already refused"
// without being pulled.
func TestHostileOCISyncForgedLayerSizesDoNotKeepGenuineOut(t *testing.T) {
	dir, genuine := layoutOfTwoVersions(t, "--max-layer-size", "512")
	if len(genuine.Manifest.Layers) < 2 {
		t.Fatalf("the genuine bundle has %d layers; the test needs 2 or more", len(genuine.Manifest.Layers))
	}
	layers := append([]ocispec.Descriptor(nil), genuine.Manifest.Layers...)
	layers[0].Size--
	layers[1].Size++
	addToLayout(t, dir, "zz-forged", ocitransport.BundleManifest(layers, genuine.FileSize, genuine.FileSHA256, "", translateID, 99))

	db := newStore(t)
	r := runCLI(t, nil, "sync", "oci-layout:"+dir, "--db", db, "--json")
	got := syncEntries(t, r)
	if v := installed(t, db, translateID); v != 2 {
		t.Fatalf("a forged manifest listing the genuine layers with shifted sizes kept version 2 out (installed: %d)\nforged: %+v\ngenuine: %+v\n%s",
			v, got["zz-forged/bundle"], got["v2/bundle"], fmt.Sprint(r.stderr))
	}
}

// TestHostileOCISyncTransientFailureOnForgedTwinDoesNotRefuseGenuine:
// OCI-16 remembers a verdict on a file's bytes for the rest of the sync,
// never a transient failure (a 503, a stall past the minimum rate, an I/O
// error, the deadline). One who may push a tag adds a candidate listing
// the genuine version's own layer under a higher version annotation, so
// it is pulled first; one blob GET of that layer failing once (a registry
// or CDN hiccup) must not be remembered as the file's verdict, or the
// genuine candidate is refused without being pulled.
func TestHostileOCISyncTransientFailureOnForgedTwinDoesNotRefuseGenuine(t *testing.T) {
	dir, genuine := layoutOfTwoVersions(t)
	addToLayout(t, dir, "zz-forged", ocitransport.BundleManifest(genuine.Manifest.Layers, genuine.FileSize, genuine.FileSHA256, "", translateID, 99))
	lr := &layoutRegistry{dir: dir, sent: map[string]int64{}}
	var hiccups atomic.Int64
	layer := "/v2/amp/x/blobs/" + genuine.Manifest.Layers[0].Digest.String()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.URL.Path == layer && hiccups.Add(1) == 1 {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		lr.serve(w, r)
	}))
	defer srv.Close()

	db := newStore(t)
	r := runCLI(t, nil, "sync", "oci://"+strings.TrimPrefix(srv.URL, "http://")+"/amp/x", "--plain-http", "--db", db, "--json")
	got := syncEntries(t, r)
	if v := installed(t, db, translateID); v != 2 {
		t.Fatalf("one 503 on the forged twin's pull kept the genuine version 2 out (installed: %d)\nforged: %+v\ngenuine: %+v",
			v, got["zz-forged/bundle"], got["v2/bundle"])
	}
}

// TestHostileOCISyncRemembersOnlyVerdictsOnTheFile: what OCI-16 remembers
// of a file refuses every other candidate of the same file unpulled, so
// only a verdict on the file's bytes may be remembered: a hiccup of the
// registry, a stall, a cut connection, an I/O error or the deadline on a
// forged twin would otherwise keep the genuine version out.
func TestHostileOCISyncRemembersOnlyVerdictsOnTheFile(t *testing.T) {
	done, cancel := context.WithCancel(t.Context())
	cancel()
	for _, tc := range []struct {
		name   string
		ctx    context.Context
		err    error
		pulled bool
		want   bool
	}{
		{"digest mismatch", t.Context(), cliutil.Failf(ocitransport.ErrDigest, "x"), false, true},
		{"whole answer short", t.Context(), cliutil.Failf(ocitransport.ErrSize, "x"), false, true},
		{"answer cut in transit", t.Context(), cliutil.Failf(ocitransport.ErrSize, "x").WithCause(io.ErrUnexpectedEOF), false, false},
		{"registry error", t.Context(), cliutil.Failf(ocitransport.ErrRegistry, "x"), false, false},
		{"stall", t.Context(), cliutil.Failf(ocitransport.ErrTooSlow, "x"), false, false},
		{"not found", t.Context(), cliutil.Failf(ocitransport.ErrNotFound, "x"), false, false},
		{"I/O error after the pull", t.Context(), cliutil.Failf(ocitransport.ErrIO, "x"), true, false},
		{"import refusal", t.Context(), cliutil.Failf("signature_invalid", "x"), true, true},
		{"the store failed", t.Context(), cliutil.Failf(resolver.ErrStoreIO, "x"), true, false},
		{"the agent did not answer", t.Context(), cliutil.Failf("admin_socket", "x"), true, false},
		{"deadline", done, cliutil.Failf(ocitransport.ErrDigest, "x"), true, false},
	} {
		if got := fileVerdict(tc.ctx, tc.err, tc.pulled); got != tc.want {
			t.Errorf("%s: remembered %v, want %v", tc.name, got, tc.want)
		}
	}
}

// layoutOfTwoVersions is a layout holding the sample bundle as v1 and
// version 2 as v2 (pushed with v2Args), and v2's artifact as the layout
// resolves it: the genuine file that forged candidates copy.
func layoutOfTwoVersions(t *testing.T, v2Args ...string) (string, *ocitransport.Artifact) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "layout")
	mustRun(t, "push", sampleFile("translate"), "oci-layout:"+dir+":v1")
	mustRun(t, append([]string{"push", translateVersion(t, 2), "oci-layout:" + dir + ":v2"}, v2Args...)...)
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
	return dir, genuine
}

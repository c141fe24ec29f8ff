package main

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/ampbundle/ampbundle/ocitransport"
)

// addToLayout writes the manifests ms into the layout dir and lists them
// in its index.json (tagged tag, or untagged when "").
func addToLayout(t *testing.T, dir, tag string, ms ...[]byte) {
	t.Helper()
	var idx ocispec.Index
	if err := json.Unmarshal(readAll(t, filepath.Join(dir, "index.json")), &idx); err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		md := digest.FromBytes(m)
		if err := os.WriteFile(filepath.Join(dir, "blobs", "sha256", md.Encoded()), m, 0o644); err != nil {
			t.Fatal(err)
		}
		d := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: md, Size: int64(len(m))}
		if tag != "" {
			d.Annotations = map[string]string{ocispec.AnnotationRefName: tag}
		}
		idx.Manifests = append(idx.Manifests, d)
	}
	raw, _ := json.Marshal(idx)
	if err := os.WriteFile(filepath.Join(dir, "index.json"), raw, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestHostileOCISyncForgedVersionHintDoesNotFreeze: sync orders the
// candidates of a bundle_id by their manifests' unverified version
// annotations, but decides nothing from them: one forged tag (a real
// bundle file annotated version 99) is refused, and the genuine version 2
// is still imported.
func TestHostileOCISyncForgedVersionHintDoesNotFreeze(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "layout")
	v1, v2 := sampleFile("translate"), translateVersion(t, 2)
	mustRun(t, "push", v1, "oci-layout:"+dir+":v1")
	mustRun(t, "push", v2, "oci-layout:"+dir+":v2")
	data := readAll(t, v1)
	sum := sha256.Sum256(data)
	layer := ocispec.Descriptor{MediaType: ocitransport.MediaTypeBundleFile, Digest: digest.FromBytes(data), Size: int64(len(data))}
	addToLayout(t, dir, "zz-forged", ocitransport.BundleManifest([]ocispec.Descriptor{layer}, int64(len(data)), sum[:], "", translateID, 99))

	db := newStore(t)
	r := runCLI(t, nil, "sync", "oci-layout:"+dir, "--db", db, "--json")
	got := syncEntries(t, r)
	if v := installed(t, db, translateID); v != 2 {
		t.Fatalf("a forged version annotation kept the genuine version 2 out (installed: %d)\n%s", v, r.stdout)
	}
	if got["zz-forged/bundle"].Error != string(ocitransport.ErrAnnotation) || got["v2/bundle"].Outcome != ociImported || got["v1/bundle"].Outcome != ociSuperseded {
		t.Fatalf("sync: %+v", got)
	}
}

// statementManifest is a revocation's manifest whose subject is the
// bundle subject, with n layers (1 is well formed) and a distinct
// annotation i.
func statementManifest(t *testing.T, subject ocispec.Descriptor, n, i int) []byte {
	t.Helper()
	layer := ocispec.Descriptor{MediaType: "application/vnd.ampbundle.revocation+cbor", Digest: digest.FromBytes([]byte{byte(i)}), Size: 1}
	layers := make([]ocispec.Descriptor, n)
	for j := range layers {
		layers[j] = layer
	}
	m := ocispec.Manifest{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageManifest, ArtifactType: ocitransport.ArtifactTypeRevocation,
		Config: ocispec.Descriptor{MediaType: ocitransport.MediaTypeEmptyConfig, Digest: digest.FromBytes([]byte("{}")), Size: 2}, Layers: layers,
		Subject: &ocispec.Descriptor{MediaType: subject.MediaType, Digest: subject.Digest, Size: subject.Size}, Annotations: map[string]string{"i": fmt.Sprint(i)}}
	raw, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// TestHostileOCISyncBadReferrersDoNotBlockBundle: a malformed referrer
// attached to the genuine bundle is reported as skipped (a warning): the
// bundle is still imported, and the sync refuses nothing. More than
// MaxReferrers of them fail the listing, so none of the bundle's referrers
// is read (a revocation among them maybe): the bundle is refused,
// oci_too_many, not installed in this run (docs/SPEC-DECISIONS.md OCI-13,
// amended in review 36; it was synced with a warning before).
func TestHostileOCISyncBadReferrersDoNotBlockBundle(t *testing.T) {
	for _, tc := range []struct {
		name, want string
		n          int
	}{
		{"a malformed referrer", string(ocitransport.ErrManifest), 1},
		{"more than MaxReferrers", string(ocitransport.ErrTooMany), ocitransport.MaxReferrers + 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "layout")
			mustRun(t, "push", sampleFile("translate"), "oci-layout:"+dir+":v1")
			var idx ocispec.Index
			if err := json.Unmarshal(readAll(t, filepath.Join(dir, "index.json")), &idx); err != nil || len(idx.Manifests) != 1 {
				t.Fatalf("index: %v", err)
			}
			var ms [][]byte
			for i := 0; i < tc.n; i++ {
				layers := 1
				if tc.n == 1 {
					layers = 2 // malformed: a statement has one layer
				}
				ms = append(ms, statementManifest(t, idx.Manifests[0], layers, i))
			}
			addToLayout(t, dir, "", ms...)
			db := newStore(t)
			r := runCLI(t, nil, "sync", "oci-layout:"+dir, "--db", db, "--json")
			got := syncEntries(t, r)
			if tc.n > ocitransport.MaxReferrers {
				if b := got["v1/bundle"]; r.code == 0 || installed(t, db, translateID) != 0 || b.Outcome != ociRefused || b.Error != tc.want {
					t.Fatalf("a bundle whose referrers were not read was not refused: exit %d, %+v\n%s", r.code, b, r.stdout)
				}
				return
			}
			if r.code != 0 || installed(t, db, translateID) != 1 || got["v1/bundle"].Outcome != ociImported {
				t.Fatalf("bad referrers blocked the bundle: exit %d\n%s", r.code, r.stdout)
			}
			if w := got["v1/referrers"]; w.Outcome != ociSkipped || w.Error != tc.want {
				t.Fatalf("the bad referrers were not reported: %+v", got)
			}
		})
	}
}

// TestHostileRegistryStalledUploadEndsAtTimeout: a registry that never
// answers an upload holds push only until --timeout (the copy and the
// upload run under it), and push, pull and import give up after 10
// minutes without it.
func TestHostileRegistryStalledUploadEndsAtTimeout(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v2/" {
			return
		}
		if r.Method == http.MethodHead {
			http.NotFound(w, r)
			return
		}
		select { // stall
		case <-r.Context().Done():
		case <-time.After(30 * time.Second):
		}
	}))
	defer srv.Close()
	repo := "oci://" + strings.TrimPrefix(srv.URL, "http://") + "/amp/x:v1"
	start := time.Now()
	failsWith(t, string(ocitransport.ErrTooSlow), "push", sampleFile("translate"), repo, "--plain-http", "--timeout", "1s")
	if d := time.Since(start); d > 15*time.Second {
		t.Fatalf("push --timeout 1s ended after %v", d)
	}
	for _, cmd := range []string{"push", "pull", "import"} {
		if r := runCLI(t, nil, cmd, "--help"); !strings.Contains(r.stdout, "10m0s") {
			t.Fatalf("%s --help shows no default --timeout of 10m0s:\n%s", cmd, r.stdout)
		}
	}
}

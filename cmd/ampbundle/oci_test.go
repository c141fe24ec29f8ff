package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/ocitransport/ocitest"
)

// installed returns the installed version of bundleID in db (0: none).
func installed(t *testing.T, db, bundleID string) uint64 {
	t.Helper()
	var ls lsJSON
	mustJSON(t, &ls, "ls", "--db", db)
	for _, b := range ls.Bundles {
		if b.BundleID == bundleID {
			return b.Version
		}
	}
	return 0
}

func syncEntries(t *testing.T, r result) map[string]ociSyncEntry {
	t.Helper()
	var rep ociSyncReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("not a sync report: %v\n%s", err, r.stdout)
	}
	out := map[string]ociSyncEntry{}
	for _, e := range rep.Entries {
		out[e.Ref[strings.LastIndexAny(e.Ref, ":@")+1:]+"/"+e.Kind] = *e
	}
	return out
}

// TestOCIPushImportSyncThroughRegistry: through the real registry, push and
// pull are byte-identical; import verifies as a file does; sync imports the
// highest version the tags offer and applies the statements attached to a
// bundle; a tag moved to an older bundle is refused as a rollback, and to
// another build of the same version as well, leaving the store unchanged.
func TestOCIPushImportSyncThroughRegistry(t *testing.T) {
	reg := ocitest.Start(t, ocitest.Config{})
	repo := "oci://" + reg.Host + "/amp/translate"
	v1, v2 := sampleFile("translate"), translateVersion(t, 2)
	mustRun(t, "push", v1, repo+":v1", "--plain-http")
	mustRun(t, "push", v2, repo+":v2", "--plain-http", "--max-layer-size", "2K")
	out := filepath.Join(t.TempDir(), "v2.ampb")
	mustRun(t, "pull", repo+":v2", "-o", out, "--plain-http")
	if a, b := readAll(t, out), readAll(t, v2); !bytes.Equal(a, b) {
		t.Fatal("pull is not byte-identical")
	}
	failsWith(t, "file_exists", "pull", repo+":v1", "-o", out, "--plain-http")
	mustRun(t, "pull", repo+":v1", "-o", out, "--plain-http", "--force")
	if a, b := readAll(t, out), readAll(t, v1); !bytes.Equal(a, b) {
		t.Fatal("pull --force did not replace the file")
	}
	// A revocation of version 1, attached to v1.
	mustRun(t, "push", revokeTranslate(t), repo+":v1", "--plain-http")

	db := newStore(t)
	r := runCLI(t, nil, "sync", repo, "--db", db, "--plain-http", "--json", "--detailed-exitcode")
	if r.code != syncExitImported {
		t.Fatalf("sync: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	got := syncEntries(t, r)
	if got["v2/bundle"].Outcome != ociImported || got["v1/bundle"].Outcome != ociSuperseded || len(got) != 3 || !strings.Contains(r.stdout, `"outcome": "applied"`) {
		t.Fatalf("sync: %+v", got)
	}
	if installed(t, db, translateID) != 2 {
		t.Fatal("version 2 not installed")
	}
	if r := runCLI(t, nil, "sync", repo, "--db", db, "--plain-http", "--detailed-exitcode"); r.code != 0 || !strings.Contains(r.stdout, "unchanged") {
		t.Fatalf("second sync: exit %d\n%s", r.code, r.stdout)
	}

	// Tag "stable" moves from version 2 to version 1: a rollback.
	db2 := newStore(t)
	mustRun(t, "push", v2, repo+":stable", "--plain-http")
	mustRun(t, "import", repo+":stable", "--db", db2, "--plain-http")
	mustRun(t, "push", v1, repo+":stable", "--plain-http")
	failsWith(t, "rollback", "import", repo+":stable", "--db", db2, "--plain-http")
	// Another build of version 2 (another creation time): refused too.
	other := filepath.Join(t.TempDir(), "other-v2.ampb")
	src := filepath.Join(t.TempDir(), "src")
	if err := os.CopyFS(src, os.DirFS(filepath.Join(testdata, "translate"))); err != nil {
		t.Fatal(err)
	}
	data := bytes.Replace(readAll(t, filepath.Join(src, "bundle.json")), []byte(`"version": 1,`), []byte(`"version": 2,`), 1)
	if err := os.WriteFile(filepath.Join(src, "bundle.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	mustRun(t, "build", src, "-o", other, "--key", sampleKey(t, "example-publisher"), "--created", "2026-11-11T00:00:00Z")
	mustRun(t, "push", other, repo+":stable", "--plain-http")
	failsWith(t, "rollback", "import", repo+":stable", "--db", db2, "--plain-http")
	if installed(t, db2, translateID) != 2 {
		t.Fatal("the store changed")
	}
	mustRun(t, "check", "--db", db2)
}

func readAll(t *testing.T, p string) []byte {
	t.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestOCILayoutTarCarriesBundleAcrossAirGap: a bundle and its statement
// pulled from the registry into a layout tar import and sync from the tar
// after the registry is gone (a layout is read from disk only), and push
// from the tar into another registry repository.
func TestOCILayoutTarCarriesBundleAcrossAirGap(t *testing.T) {
	carry := filepath.Join(t.TempDir(), "carry.tar")
	t.Run("connected side", func(t *testing.T) {
		reg := ocitest.Start(t, ocitest.Config{})
		repo := "oci://" + reg.Host + "/amp/translate"
		mustRun(t, "push", translateVersion(t, 2), repo+":v2", "--plain-http")
		mustRun(t, "push", revokeTranslate(t), repo+":v2", "--plain-http")
		var v pushedJSON
		mustJSON(t, &v, "pull", repo+":v2", "-o", "oci-layout:"+carry, "--plain-http")
		if v.Statements != 1 || v.Kind != "bundle" {
			t.Fatalf("copied: %+v", v)
		}
		// And back into the registry from the tar, under another tag.
		mustRun(t, "push", "oci-layout:"+carry+":v2", repo+":from-tar", "--plain-http")
		if b := ocitest.RunCrane(t, "digest", reg.Host+"/amp/translate:from-tar"); strings.TrimSpace(string(b)) != v.Digest {
			t.Fatalf("digest changed on the way back: %s vs %s", b, v.Digest)
		}
	}) // the registry is stopped here
	db := newStore(t)
	mustRun(t, "import", "oci-layout:"+carry+":v2", "--db", db)
	if installed(t, db, translateID) != 2 {
		t.Fatal("not imported from the tar")
	}
	r := runCLI(t, nil, "sync", "oci-layout:"+carry, "--db", newStore(t), "--json")
	if got := syncEntries(t, r); r.code != 0 || got["v2/bundle"].Outcome != ociImported {
		t.Fatalf("sync from the tar: exit %d %+v", r.code, got)
	}
}

// TestOCIOverTLSWithBasicAuth: the CLI reaches a TLS registry with basic
// auth through --tls-ca and --registry-config; without the credentials the
// import is refused and the store is unchanged.
func TestOCIOverTLSWithBasicAuth(t *testing.T) {
	reg := ocitest.Start(t, ocitest.Config{TLS: true, Auth: true})
	repo := "oci://" + reg.Host + "/amp/translate"
	mustRun(t, "push", sampleFile("translate"), repo+":v1", "--tls-ca", reg.CAFile, "--registry-config", reg.DockerConfig)
	db := newStore(t)
	failsWith(t, "oci_registry_error", "import", repo+":v1", "--db", db, "--tls-ca", reg.CAFile)
	failsWith(t, "oci_registry_error", "import", repo+":v1", "--db", db, "--registry-config", reg.DockerConfig)
	if installed(t, db, translateID) != 0 {
		t.Fatal("a refused import changed the store")
	}
	mustRun(t, "import", repo+":v1", "--db", db, "--tls-ca", reg.CAFile, "--registry-config", reg.DockerConfig)
	if installed(t, db, translateID) != 1 {
		t.Fatal("not imported")
	}
}

// TestHostileRegistryImportLeavesStoreUnchanged: a registry that serves a
// blob other than its digest, or a manifest far over the bound, is refused
// by import and sync, and the store is exactly as it was.
func TestHostileRegistryImportLeavesStoreUnchanged(t *testing.T) {
	good := readAll(t, sampleFile("translate"))
	dir := t.TempDir()
	mustRun(t, "push", sampleFile("translate"), "oci-layout:"+filepath.Join(dir, "l")+":v1")
	idx := readAll(t, filepath.Join(dir, "l", "index.json"))
	var index struct {
		Manifests []struct {
			Digest string `json:"digest"`
		} `json:"manifests"`
	}
	if err := json.Unmarshal(idx, &index); err != nil || len(index.Manifests) == 0 {
		t.Fatalf("index: %s", idx)
	}
	mdigest := index.Manifests[len(index.Manifests)-1].Digest
	manifest := readAll(t, filepath.Join(dir, "l", "blobs", "sha256", strings.TrimPrefix(mdigest, "sha256:")))
	for _, tc := range []struct{ mode, want string }{
		{"wrong blob", "oci_digest_mismatch"},
		{"huge manifest", "oci_manifest_too_large"},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				switch {
				case strings.Contains(r.URL.Path, "/tags/list"):
					fmt.Fprint(w, `{"name":"amp/x","tags":["v1"]}`)
				case strings.Contains(r.URL.Path, "/manifests/"):
					w.Header().Set("Content-Type", "application/vnd.oci.image.manifest.v1+json")
					w.Header().Set("Docker-Content-Digest", mdigest)
					if tc.mode == "huge manifest" {
						w.Header().Set("Content-Length", "1073741824")
						return
					}
					w.Header().Set("Content-Length", fmt.Sprint(len(manifest)))
					w.Write(manifest)
				case strings.Contains(r.URL.Path, "/blobs/"):
					bad := append([]byte(nil), good...)
					bad[len(bad)-10] ^= 1
					w.Write(bad)
				default:
					w.WriteHeader(http.StatusOK)
				}
			}))
			defer srv.Close()
			repo := "oci://" + strings.TrimPrefix(srv.URL, "http://") + "/amp/x"
			db := newStore(t)
			before := readAll(t, db)
			failsWith(t, tc.want, "import", repo+":v1", "--db", db, "--plain-http")
			if !bytes.Equal(readAll(t, db), before) {
				t.Fatal("a refused import touched the store file")
			}
			r := runCLI(t, nil, "sync", repo, "--db", db, "--plain-http", "--json")
			if got := syncEntries(t, r); r.code != 1 || got["v1/unknown"].Error+got["v1/bundle"].Error != tc.want {
				t.Fatalf("sync: exit %d %+v", r.code, got)
			}
			if installed(t, db, translateID) != 0 {
				t.Fatal("something landed")
			}
		})
	}
}

// TestOCIPlainHTTPOnlyForLoopbackOrNamedHost: --plain-http to a host that
// is neither loopback nor named with --plain-http-host is refused before
// any connection.
func TestOCIPlainHTTPOnlyForLoopbackOrNamedHost(t *testing.T) {
	failsWith(t, "oci_plain_http_refused", "pull", "oci://registry.invalid:5000/amp/x:v1", "-o", filepath.Join(t.TempDir(), "x"), "--plain-http")
	failsWith(t, "oci_reference_invalid", "pull", "oci://registry.invalid", "-o", filepath.Join(t.TempDir(), "x"))
	if r := runCLI(t, nil, "pull", "oci://registry.invalid/amp/x", "-o", "x", "--json"); r.code != 2 {
		t.Fatalf("a pull without tag: exit %d", r.code)
	}
}

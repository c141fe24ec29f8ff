package ocitransport_test

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/ampbundle/ampbundle/internal/testalloc"
	"github.com/ampbundle/ampbundle/ocitransport"
)

// hostileLayout writes a layout folder: blobs (by digest) and an
// index.json of the given body.
func hostileLayout(t *testing.T, index string, blobs ...[]byte) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "blobs", "sha256"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, b := range blobs {
		if err := os.WriteFile(filepath.Join(dir, "blobs", "sha256", digest.FromBytes(b).Encoded()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "oci-layout"), []byte(`{"imageLayoutVersion":"1.0.0"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "index.json"), []byte(index), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// indexOf is an index.json listing desc n times.
func indexOf(desc string, n int) string {
	return `{"schemaVersion":2,"manifests":[` + strings.TrimSuffix(strings.Repeat(desc+",", n), ",") + `]}`
}

func manifestDesc(raw []byte, size int) string {
	return fmt.Sprintf(`{"mediaType":%q,"digest":%q,"size":%d}`, ocispec.MediaTypeImageManifest, digest.FromBytes(raw), size)
}

// TestHostileLayoutOverBoundsIsRefusedBeforeOrasReadsIt: a layout whose
// index.json or manifests are over the bounds (a manifest over
// MaxManifestSize listed again and again, an index.json over the bound, more
// entries than MaxTags, a member given twice, a descriptor that lies about
// its blob's size) is refused when opened, folder or tar, before oras-go
// reads the manifests: opening allocates a small fraction of what they
// weigh. A genuine layout listing one manifest twice opens.
func TestHostileLayoutOverBoundsIsRefusedBeforeOrasReadsIt(t *testing.T) {
	small := []byte(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.empty.v1+json","digest":"` + digest.FromBytes([]byte("{}")).String() + `","size":2},"layers":[]}`)
	big := append(append([]byte(nil), small[:len(small)-1]...), []byte(`,"annotations":{"pad":"`+strings.Repeat("A", ocitransport.DefaultMaxManifestSize)+`"}}`)...)
	for _, tc := range []struct {
		name  string
		index string
		blobs [][]byte
		o     ocitransport.Options
		want  string
	}{
		{"manifest over the bound listed 32 times", indexOf(manifestDesc(big, len(big)), 32), [][]byte{big}, ocitransport.Options{}, string(ocitransport.ErrManifestTooBig)},
		{"descriptor lies about the size", indexOf(manifestDesc(big, len(small)), 1), [][]byte{big}, ocitransport.Options{}, string(ocitransport.ErrSize)},
		{"more entries than MaxTags", indexOf(manifestDesc(small, len(small)), 4), [][]byte{small}, ocitransport.Options{MaxTags: 3}, string(ocitransport.ErrTooMany)},
		{"manifests given twice", `{"schemaVersion":2,"manifests":[],"Manifests":[]}`, nil, ocitransport.Options{}, string(ocitransport.ErrLayout)},
		{"index.json not an object", `[` + manifestDesc(small, len(small)) + `]`, nil, ocitransport.Options{}, string(ocitransport.ErrLayout)},
		{"one manifest listed twice", indexOf(manifestDesc(small, len(small)), 2), [][]byte{small}, ocitransport.Options{}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := hostileLayout(t, tc.index, tc.blobs...)
			tarPath := filepath.Join(t.TempDir(), "l.tar")
			writeTarOf(t, dir, tarPath)
			for _, p := range []string{dir, tarPath} {
				loc, err := ocitransport.ParseLocation("oci-layout:" + p)
				if err != nil {
					t.Fatal(err)
				}
				var ep *ocitransport.Endpoint
				alloc := testalloc.Least(func() {
					if ep, err = ocitransport.Open(context.Background(), loc, tc.o, ocitransport.ReadOnly); ep != nil {
						ep.Close()
					}
				})
				if nameOf(err) != tc.want {
					t.Fatalf("%s: got %v, want %s", p, err, tc.want)
				}
				if tc.want != "" && alloc > 2<<20 {
					t.Fatalf("%s: refusing allocated %d bytes: the manifests were read", p, alloc)
				}
			}
		})
	}
}

// TestHostileLayoutIndexOverBoundIsNotRead: an index.json over
// MaxManifestSize (a sparse file: no disk) is refused from its size.
func TestHostileLayoutIndexOverBoundIsNotRead(t *testing.T) {
	dir := hostileLayout(t, `{}`)
	if err := os.Truncate(filepath.Join(dir, "index.json"), 1<<30); err != nil {
		t.Fatal(err)
	}
	var err error
	alloc := testalloc.Least(func() {
		_, err = ocitransport.Open(context.Background(), ocitransport.Location{Kind: ocitransport.KindLayout, Path: dir}, ocitransport.Options{}, ocitransport.ReadOnly)
	})
	if nameOf(err) != string(ocitransport.ErrManifestTooBig) || alloc > 1<<20 {
		t.Fatalf("a 1 GiB index.json: %v after allocating %d bytes", err, alloc)
	}
}

// writeTarOf writes the folder dir, as it is, as a layout tar at p.
func writeTarOf(t *testing.T, dir, p string) {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if err := tw.WriteHeader(&tar.Header{Name: filepath.ToSlash(rel), Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		_, err = tw.Write(data)
		return err
	})
	if err == nil {
		err = tw.Close()
	}
	if err == nil {
		err = os.WriteFile(p, buf.Bytes(), 0o644)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// TestHostileLayoutSymlinksAreRefused: a layout folder prepared by someone
// else whose index.json, blobs, blobs/sha256 or a blob is a symbolic link
// is refused, opened to read or to write: a push writes nothing outside
// the folder.
func TestHostileLayoutSymlinksAreRefused(t *testing.T) {
	for _, link := range []string{"index.json", "oci-layout", "blobs", "blobs/sha256", "blob"} {
		for _, mode := range []ocitransport.Mode{ocitransport.ReadOnly, ocitransport.ReadWrite} {
			t.Run(fmt.Sprintf("%s mode %d", link, mode), func(t *testing.T) {
				root := t.TempDir()
				dir := filepath.Join(root, "layout")
				outside := filepath.Join(root, "outside")
				for _, d := range []string{filepath.Join(dir, "blobs", "sha256"), outside} {
					if err := os.MkdirAll(d, 0o755); err != nil {
						t.Fatal(err)
					}
				}
				os.WriteFile(filepath.Join(dir, "oci-layout"), []byte(`{"imageLayoutVersion":"1.0.0"}`), 0o644)
				os.WriteFile(filepath.Join(dir, "index.json"), []byte(`{"schemaVersion":2,"manifests":[]}`), 0o644)
				target := filepath.Join(dir, filepath.FromSlash(link))
				if link == "blob" {
					target = filepath.Join(dir, "blobs", "sha256", strings.Repeat("a", 64))
				}
				os.RemoveAll(target)
				if err := os.Symlink(filepath.Join(outside, "x"), target); err != nil {
					t.Fatal(err)
				}
				loc, _ := ocitransport.ParseLocation("oci-layout:" + dir + ":v1")
				ep, err := ocitransport.Open(context.Background(), loc, ocitransport.Options{}, mode)
				if ep != nil {
					if mode == ocitransport.ReadWrite {
						f, _ := os.Open(sampleBundle)
						ep.PushBundle(context.Background(), f, "t.ampb", "v1")
						f.Close()
					}
					ep.Close()
				}
				if nameOf(err) != string(ocitransport.ErrLayout) {
					t.Fatalf("a layout whose %s is a symbolic link: %v", link, err)
				}
				if ents, _ := os.ReadDir(outside); len(ents) != 0 {
					t.Fatalf("something was written outside the layout: %v", ents)
				}
			})
		}
	}
}

// TestHostileManifestRepeatedLayerIsRefused: a bundle's manifest that lists
// one small blob MaxLayers times (a layout of a few KiB that would make an
// import spool the whole bundle bound) is refused as it is decoded, from
// a layout as from any source, before a byte of a layer is read.
func TestHostileManifestRepeatedLayerIsRefused(t *testing.T) {
	blob := bytes.Repeat([]byte{'x'}, 4<<10)
	ld := ocispec.Descriptor{MediaType: ocitransport.MediaTypeBundlePart, Digest: digest.FromBytes(blob), Size: int64(len(blob))}
	layers := make([]ocispec.Descriptor, 1024)
	h := sha256.New()
	for i := range layers {
		layers[i] = ld
		h.Write(blob)
	}
	m := ocitransport.BundleManifest(layers, int64(len(layers)*len(blob)), h.Sum(nil), "", "", 0)
	if _, err := ocitransport.DecodeManifest(m, ocispec.Descriptor{}, 0); nameOf(err) != string(ocitransport.ErrManifest) {
		t.Fatalf("DecodeManifest: %v", err)
	}
	md := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: digest.FromBytes(m), Size: int64(len(m)),
		Annotations: map[string]string{ocispec.AnnotationRefName: "v1"}}
	raw, _ := json.Marshal(ocispec.Index{Manifests: []ocispec.Descriptor{md}})
	dir := hostileLayout(t, string(raw), blob, m, []byte("{}"))
	ep := mustOpen(t, "oci-layout:"+dir+":v1", ocitransport.Options{}, ocitransport.ReadOnly)
	if _, err := ep.Resolve(context.Background(), "v1"); nameOf(err) != string(ocitransport.ErrManifest) {
		t.Fatalf("Resolve of a manifest repeating one layer: %v", err)
	}
}

// countingDialer counts the bytes the client reads from the registry.
type countingDialer struct{ n atomic.Int64 }

type countingConn struct {
	net.Conn
	n *atomic.Int64
}

func (c countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.n.Add(int64(n))
	return n, err
}

func (d *countingDialer) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return countingConn{c, &d.n}, nil
}

// referrersRegistry serves the faithful sample and, for its referrers,
// page (with a link to a next page, forever).
func referrersRegistry(t *testing.T, page []byte, requests *atomic.Int64) *httptest.Server {
	h := newHostileRegistry(t, "faithful")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/v2/amp/x/referrers/") {
			requests.Add(1)
			w.Header().Set("Content-Type", ocispec.MediaTypeImageIndex)
			w.Header().Set("Link", `<`+r.URL.Path+`?p=1>; rel="next"`)
			w.Write(page)
			return
		}
		h.serve(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestHostileRegistryReferrersAreBoundedAsTheyArrive: a referrers page
// far over its byte bound is refused after reading about the bound (not
// the page, not ten pages), and pages each within the bound are counted as
// they arrive: past MaxReferrers the listing stops, without the next page.
func TestHostileRegistryReferrersAreBoundedAsTheyArrive(t *testing.T) {
	entry := fmt.Sprintf(`{"mediaType":%q,"digest":"sha256:%s","size":100,"artifactType":%q}`, ocispec.MediaTypeImageManifest, strings.Repeat("a", 64), ocitransport.ArtifactTypeRevocation)
	for _, tc := range []struct {
		name     string
		page     []byte
		maxRead  int64
		maxPages int64
	}{
		{"one 4 MiB page", []byte(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[{}` + strings.Repeat(`,{}`, (4<<20)/3) + `]}`), 2 << 20, 1},
		{"pages of 600 referrers", []byte(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[` + strings.TrimSuffix(strings.Repeat(entry+",", 600), ",") + `]}`), 2 << 20, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var requests atomic.Int64
			srv := referrersRegistry(t, tc.page, &requests)
			var d countingDialer
			ep := mustOpen(t, "oci://"+strings.TrimPrefix(srv.URL, "http://")+"/amp/x", ocitransport.Options{PlainHTTP: true, DialContext: d.dial}, ocitransport.ReadOnly)
			a, err := ep.Resolve(context.Background(), "v1")
			if err != nil {
				t.Fatal(err)
			}
			before := d.n.Load()
			_, err = ep.Statements(context.Background(), a)
			read := d.n.Load() - before
			if nameOf(err) != string(ocitransport.ErrTooMany) {
				t.Fatalf("Statements: %v", err)
			}
			if read > tc.maxRead || requests.Load() > tc.maxPages {
				t.Fatalf("read %d bytes in %d pages before refusing (bound %d bytes, %d pages)", read, requests.Load(), tc.maxRead, tc.maxPages)
			}
		})
	}
}

// TestHostileRegistryTrickledTagListIsTooSlow: the tag list (every
// answer, not only blobs) must keep the minimum data rate after the grace
// period: a registry that sends one byte every 2 s is refused as too slow.
func TestHostileRegistryTrickledTagListIsTooSlow(t *testing.T) {
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v2/" {
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		for _, c := range []byte(`{"name":"amp/x","tags":["v1"]}`) {
			select {
			case <-r.Context().Done():
				return
			case <-stop:
				return
			case <-time.After(2 * time.Second):
			}
			w.Write([]byte{c})
			w.(http.Flusher).Flush()
		}
	}))
	defer srv.Close()
	defer close(stop)
	ep := mustOpen(t, "oci://"+strings.TrimPrefix(srv.URL, "http://")+"/amp/x", ocitransport.Options{PlainHTTP: true, Grace: 500 * time.Millisecond, MinDataRate: 1024}, ocitransport.ReadOnly)
	done := make(chan error, 1)
	go func() { _, err := ep.Tags(context.Background()); done <- err }()
	select {
	case err := <-done:
		if nameOf(err) != string(ocitransport.ErrTooSlow) {
			t.Fatalf("a trickled tag list: %v", err)
		}
	case <-time.After(8 * time.Second):
		t.Fatal("the tag list still read a 1-byte-per-2s body after 8 s (grace 0.5 s, 1024 B/s)")
	}
}

// TestHostileRegistryRealmGetsNoCredentials: the credentials of the
// credentials file go to a token realm only over https, on the registry's
// host or one named with --allow-auth-host (or --allow-redirect): a realm
// on another host, or in plain HTTP on another host even when allowed,
// gets nothing and the request fails with oci_auth_host_refused.
func TestHostileRegistryRealmGetsNoCredentials(t *testing.T) {
	for _, tc := range []struct {
		name, realm string
		allow       []string
	}{
		{"plain HTTP realm elsewhere", "http://token.evil.invalid/token", nil},
		{"https realm elsewhere", "https://token.evil.invalid/token", nil},
		{"plain HTTP realm allowed", "http://token.evil.invalid/token", []string{"token.evil.invalid"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var leaked []string
			var srv *httptest.Server
			srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Host != strings.TrimPrefix(srv.URL, "http://") {
					mu.Lock()
					leaked = append(leaked, r.Host+" "+r.Header.Get("Authorization"))
					mu.Unlock()
					http.Error(w, "no", http.StatusUnauthorized)
					return
				}
				w.Header().Set("WWW-Authenticate", `Bearer realm="`+tc.realm+`",service="reg",scope="repository:amp/x:pull"`)
				http.Error(w, "auth", http.StatusUnauthorized)
			}))
			defer srv.Close()
			host := strings.TrimPrefix(srv.URL, "http://")
			cfg := filepath.Join(t.TempDir(), "config.json")
			os.WriteFile(cfg, []byte(`{"auths":{"`+host+`":{"auth":"YWxpY2U6czNjcmV0"}}}`), 0o600)
			o := ocitransport.Options{PlainHTTP: true, CredentialsFile: cfg, AllowAuthHosts: tc.allow,
				DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
					return (&net.Dialer{}).DialContext(ctx, network, host) // every host is the test's peer
				}}
			ep := mustOpen(t, "oci://"+host+"/amp/x", o, ocitransport.ReadOnly)
			_, err := ep.Resolve(context.Background(), "v1")
			mu.Lock()
			defer mu.Unlock()
			if len(leaked) > 0 || nameOf(err) != string(ocitransport.ErrAuthHost) {
				t.Fatalf("resolve: %v; sent to the realm: %v", err, leaked)
			}
		})
	}
}

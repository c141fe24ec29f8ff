package ocitransport_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/ocitransport"
)

// trickle writes body one byte a second, until the client goes away.
func trickle(w http.ResponseWriter, r *http.Request, body string, stop <-chan struct{}) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	w.(http.Flusher).Flush()
	for _, c := range []byte(body) {
		select {
		case <-r.Context().Done():
			return
		case <-stop:
			return
		case <-time.After(time.Second):
		}
		w.Write([]byte{c})
		w.(http.Flusher).Flush()
	}
}

// TestHostileRegistryBlobLookingPathEscapesTimeBound: only a blob GET is
// left to its reader's bounds, so a GET that merely looks like one must not
// be: a hostile registry chooses its token realm's path (".../blobs/..."),
// and a repository may have a "blobs" path element (its tag list,
// referrers, manifests). Each trickled answer must end as oci_too_slow as
// soon as its twin on an ordinary path does (OCI-10, OCI-11): within
// moments (the grace, 0.3 s); the test allows 10 s for a loaded machine,
// far below the 30 s an unbounded answer takes to trickle whole.
func TestHostileRegistryBlobLookingPathEscapesTimeBound(t *testing.T) {
	for _, tc := range []struct {
		name, repo, realmPath string
	}{
		{"token realm on an ordinary path (control)", "amp/x", "/token"},
		{"token realm under /blobs/", "amp/x", "/v2/amp/x/blobs/token"},
		{"tag list of an ordinary repository (control)", "amp/x", ""},
		{"tag list of a repository named blobs", "amp/blobs", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stop := make(chan struct{})
			var srv *httptest.Server
			srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				p := r.URL.Path
				switch {
				case p == "/v2/":
				case tc.realmPath != "" && p == tc.realmPath:
					trickle(w, r, `{"token":"abcdefghijklmnop"}`, stop)
				case tc.realmPath != "":
					w.Header().Set("WWW-Authenticate", `Bearer realm="`+srv.URL+tc.realmPath+`",service="reg",scope="repository:amp/x:pull"`)
					http.Error(w, "auth", http.StatusUnauthorized)
				case strings.HasSuffix(p, "/tags/list"):
					trickle(w, r, `{"name":"x","tags":["v1","v2","v3"]}`, stop)
				default:
					http.NotFound(w, r)
				}
			}))
			defer srv.Close()
			defer close(stop)
			o := ocitransport.Options{PlainHTTP: true, Grace: 300 * time.Millisecond, MinDataRate: 1024}
			ep := mustOpen(t, "oci://"+strings.TrimPrefix(srv.URL, "http://")+"/"+tc.repo, o, ocitransport.ReadOnly)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			done := make(chan error, 1)
			go func() {
				var err error
				if tc.realmPath != "" {
					_, err = ep.Resolve(ctx, "v1")
				} else {
					_, err = ep.Tags(ctx)
				}
				done <- err
			}()
			select {
			case err := <-done:
				if nameOf(err) != string(ocitransport.ErrTooSlow) {
					t.Fatalf("a trickled answer (1 byte/s; grace 0.3 s, 1024 B/s): %v", err)
				}
			case <-time.After(10 * time.Second):
				cancel()
				<-done
				t.Fatal("still reading a 1-byte-per-second answer after 10 s (grace 0.3 s, min rate 1024 B/s): the answer escaped the time bound")
			}
		})
	}
}

// TestHostileLayoutHardlinkedIndexIsWrittenThrough: a layout folder
// prepared by someone else whose index.json is a hard link to a file
// outside the layout is a regular file; a push that wrote index.json in
// place (oras-go's os.WriteFile) would rewrite the outside file. Opening
// it to write must be refused (oci_layout_error), or the outside file left
// as it was (OCI-15).
func TestHostileLayoutHardlinkedIndexIsWrittenThrough(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "layout")
	if err := os.MkdirAll(filepath.Join(dir, "blobs", "sha256"), 0o755); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(root, "outside.json")
	const before = `{"schemaVersion":2,"manifests":[]}`
	if err := os.WriteFile(outside, []byte(before), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "oci-layout"), []byte(`{"imageLayoutVersion":"1.0.0"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(outside, filepath.Join(dir, "index.json")); err != nil {
		t.Fatal(err)
	}
	loc, err := ocitransport.ParseLocation("oci-layout:" + dir + ":v1")
	if err != nil {
		t.Fatal(err)
	}
	ep, err := ocitransport.Open(context.Background(), loc, ocitransport.Options{}, ocitransport.ReadWrite)
	if err == nil {
		defer ep.Close()
		f, ferr := os.Open(sampleBundle)
		if ferr != nil {
			t.Fatal(ferr)
		}
		_, err = ep.PushBundle(context.Background(), f, "t.ampb", "v1")
		f.Close()
	}
	after, rerr := os.ReadFile(outside)
	if rerr != nil {
		t.Fatal(rerr)
	}
	if string(after) != before {
		t.Fatalf("a push through a hard-linked index.json (open/push: %v) rewrote the file outside the layout: %d bytes before, %d after", err, len(before), len(after))
	}
}

// TestHostileRegistryDuplicateTagsAreListedOnce: a tag list page may name
// one tag again and again (10,000 times fit in one 2 MiB page); Tags
// returns each tag once, else sync resolves the manifest, lists the
// referrers and (for a candidate that is refused) pulls the whole file
// once per repetition.
func TestHostileRegistryDuplicateTagsAreListedOnce(t *testing.T) {
	const n = 500
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/tags/list") {
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"name":"amp/x","tags":["v1"` + strings.Repeat(`,"v1"`, n-1) + `]}`))
		}
	}))
	defer srv.Close()
	ep := mustOpen(t, "oci://"+strings.TrimPrefix(srv.URL, "http://")+"/amp/x", ocitransport.Options{PlainHTTP: true}, ocitransport.ReadOnly)
	tags, err := ep.Tags(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(tags) != 1 {
		t.Fatalf("a page naming tag v1 %d times listed %d tags", n, len(tags))
	}
}

// TestHostileRegistryTagPageLoopIsNamedTooMany: a tag list whose Link
// header points back at itself is cut after TagListMaxPages, and named
// oci_too_many as every other count bound (not oci_registry_error).
func TestHostileRegistryTagPageLoopIsNamedTooMany(t *testing.T) {
	var pages atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/tags/list") {
			pages.Add(1)
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Link", `<`+r.URL.Path+`?n=1000>; rel="next"`)
			w.Write([]byte(`{"name":"amp/x","tags":["v1"]}`))
		}
	}))
	defer srv.Close()
	ep := mustOpen(t, "oci://"+strings.TrimPrefix(srv.URL, "http://")+"/amp/x", ocitransport.Options{PlainHTTP: true}, ocitransport.ReadOnly)
	_, err := ep.Tags(context.Background())
	// TagListMaxPages: pages of 1,000 names up to the names one listing
	// reads (OCI-23).
	if nameOf(err) != string(ocitransport.ErrTooMany) || pages.Load() > int64(ocitransport.ListedTagsPerKept*ocitransport.DefaultMaxTags/1000+1) {
		t.Fatalf("a tag list looping on its Link header: %v after %d pages", err, pages.Load())
	}
}

// TestHostileRegistryDuplicateReferrersAreFetchedOnce: a referrers page
// may list one statement's descriptor up to MaxReferrers times; fetching
// each repetition would cost 1,000 manifests per bundle, per sync. One
// digest must be fetched once (OCI-13).
func TestHostileRegistryDuplicateReferrersAreFetchedOnce(t *testing.T) {
	h := newHostileRegistry(t, "faithful")
	subject := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: h.mdigest, Size: int64(len(h.manifest))}
	stmt := signedStatement(t, bundle.MediaTypeRevocation)
	sm, _, ok := ocitransport.StatementManifest(stmt, subject)
	if !ok {
		t.Fatal("no statement manifest")
	}
	sd := digest.FromBytes(sm)
	entry := fmt.Sprintf(`{"mediaType":%q,"digest":%q,"size":%d,"artifactType":%q}`, ocispec.MediaTypeImageManifest, sd, len(sm), ocitransport.ArtifactTypeRevocation)
	const n = 200
	var gets atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch p := r.URL.Path; {
		case strings.HasPrefix(p, "/v2/amp/x/referrers/"):
			w.Header().Set("Content-Type", ocispec.MediaTypeImageIndex)
			w.Write([]byte(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[` + strings.TrimSuffix(strings.Repeat(entry+",", n), ",") + `]}`))
		case p == "/v2/amp/x/manifests/"+sd.String():
			if r.Method == http.MethodGet {
				gets.Add(1)
			}
			w.Header().Set("Content-Type", ocispec.MediaTypeImageManifest)
			w.Header().Set("Docker-Content-Digest", sd.String())
			w.Header().Set("Content-Length", fmt.Sprint(len(sm)))
			w.Write(sm)
		default:
			h.serve(w, r)
		}
	}))
	defer srv.Close()
	ep := mustOpen(t, "oci://"+strings.TrimPrefix(srv.URL, "http://")+"/amp/x", ocitransport.Options{PlainHTTP: true}, ocitransport.ReadOnly)
	a, err := ep.Resolve(context.Background(), "v1")
	if err != nil {
		t.Fatal(err)
	}
	out, err := ep.Statements(context.Background(), a)
	if err != nil {
		t.Fatal(err)
	}
	if gets.Load() > 1 || len(out) != 1 {
		t.Fatalf("a referrers page listing one statement %d times: fetched its manifest %d times, returned %d statements", n, gets.Load(), len(out))
	}
}

// TestHostileRegistryGzipAnswerIsNotInflated: a client that asks for gzip
// and inflates what comes back (net/http's default) counts inflated bytes
// in every bound and in the minimum data rate: a registry sends a 4 MiB
// blob of zeros as ~5 KiB and the client reads, hashes and spools all of
// it (~1000×). Compression is not asked for and nothing is inflated
// (OCI-13).
func TestHostileRegistryGzipAnswerIsNotInflated(t *testing.T) {
	const size = 4 << 20
	var z bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&z, gzip.BestCompression)
	zw.Write(make([]byte, size))
	zw.Close()
	blob := make([]byte, size)
	sum := sha256.Sum256(blob)
	layer := ocispec.Descriptor{MediaType: ocitransport.MediaTypeBundleFile, Digest: digest.FromBytes(blob), Size: size}
	m := ocitransport.BundleManifest([]ocispec.Descriptor{layer}, size, sum[:], "", "", 0)
	md := digest.FromBytes(m)
	var acceptGzip atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch p := r.URL.Path; {
		case strings.HasPrefix(p, "/v2/amp/x/manifests/"):
			w.Header().Set("Content-Type", ocispec.MediaTypeImageManifest)
			w.Header().Set("Docker-Content-Digest", md.String())
			w.Header().Set("Content-Length", fmt.Sprint(len(m)))
			w.Write(m)
		case strings.HasPrefix(p, "/v2/amp/x/blobs/"):
			if strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
				acceptGzip.Store(true)
			}
			w.Header().Set("Content-Encoding", "gzip")
			w.Header().Set("Content-Length", fmt.Sprint(z.Len()))
			w.Write(z.Bytes())
		}
	}))
	defer srv.Close()
	var d countingDialer
	ep := mustOpen(t, "oci://"+strings.TrimPrefix(srv.URL, "http://")+"/amp/x", ocitransport.Options{PlainHTTP: true, DialContext: d.dial}, ocitransport.ReadOnly)
	a, err := ep.Resolve(context.Background(), "v1")
	if err != nil {
		t.Fatal(err)
	}
	cw := &countWriter{}
	err = ep.WriteBundle(context.Background(), a, cw)
	if cw.n > 4*d.n.Load() {
		t.Fatalf("the client asked for gzip (%v) and inflated %d wire bytes into %d bytes written (%d×; pull: %v)",
			acceptGzip.Load(), d.n.Load(), cw.n, cw.n/max(d.n.Load(), 1), err)
	}
}

// countWriter counts what is written to it.
type countWriter struct{ n int64 }

func (c *countWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

// TestHostileRegistryCopyTagsBundleBeforeItsStatementsLand: when Copy
// (pull --out oci-layout:, push from a layout) fails on a statement's blob
// (here: one byte flipped), a destination that already held the bundle
// under its tag without the revocation would, carried across the air gap,
// import as if never revoked. The tag lands last, only when every
// statement did (docs/SPEC-DECISIONS.md OCI-14).
func TestHostileRegistryCopyTagsBundleBeforeItsStatementsLand(t *testing.T) {
	h := newHostileRegistry(t, "faithful")
	subject := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: h.mdigest, Size: int64(len(h.manifest))}
	stmt := signedStatement(t, bundle.MediaTypeRevocation)
	sm, layer, _ := ocitransport.StatementManifest(stmt, subject)
	sd := digest.FromBytes(sm)
	entry := fmt.Sprintf(`{"mediaType":%q,"digest":%q,"size":%d,"artifactType":%q}`, ocispec.MediaTypeImageManifest, sd, len(sm), ocitransport.ArtifactTypeRevocation)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch p := r.URL.Path; {
		case strings.HasPrefix(p, "/v2/amp/x/referrers/"):
			w.Header().Set("Content-Type", ocispec.MediaTypeImageIndex)
			w.Write([]byte(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[` + entry + `]}`))
		case p == "/v2/amp/x/manifests/"+sd.String():
			w.Header().Set("Content-Type", ocispec.MediaTypeImageManifest)
			w.Header().Set("Docker-Content-Digest", sd.String())
			w.Header().Set("Content-Length", fmt.Sprint(len(sm)))
			w.Write(sm)
		case p == "/v2/amp/x/blobs/"+layer.Digest.String():
			bad := append([]byte(nil), stmt...)
			bad[len(bad)/2] ^= 1
			w.Header().Set("Content-Length", fmt.Sprint(len(bad)))
			w.Write(bad)
		default:
			h.serve(w, r)
		}
	}))
	defer srv.Close()
	src := mustOpen(t, "oci://"+strings.TrimPrefix(srv.URL, "http://")+"/amp/x", ocitransport.Options{PlainHTTP: true}, ocitransport.ReadOnly)
	dir := filepath.Join(t.TempDir(), "layout")
	dst := mustOpen(t, "oci-layout:"+dir, ocitransport.Options{}, ocitransport.ReadWrite)
	_, _, err := ocitransport.Copy(context.Background(), src, "v1", dst, "v1")
	if nameOf(err) != string(ocitransport.ErrDigest) {
		t.Fatalf("Copy with a statement blob that does not match its digest: %v", err)
	}
	dst.Close()
	check := mustOpen(t, "oci-layout:"+dir, ocitransport.Options{}, ocitransport.ReadOnly)
	if a, rerr := check.Resolve(context.Background(), "v1"); rerr == nil {
		stmts, _ := check.Statements(context.Background(), a)
		t.Fatalf("the failed copy (%v) left the bundle tagged v1 in the destination with %d of its 1 statement", err, len(stmts))
	}
}

// TestHostileRegistryRealmIsAnUnpolicedRedirect: without credentials, a
// bearer challenge's realm would be fetched wherever it points (any https
// host and port, with the realm's own path and query kept), although a
// redirect there is refused (OCI-4): a registry would make the client send
// GETs of its choosing to hosts only the client can reach (an internal
// admin port, a metadata service over https). A realm on a host other than
// the registry, --allow-auth-host or --allow-redirect is refused before any
// request leaves (OCI-12).
func TestHostileRegistryRealmIsAnUnpolicedRedirect(t *testing.T) {
	var mu sync.Mutex
	var reached []string
	internal := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		reached = append(reached, r.Host+r.URL.RequestURI())
		mu.Unlock()
		http.Error(w, "no", http.StatusForbidden)
	}))
	defer internal.Close()
	reg := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="https://example.com/admin/delete?all=1",service="reg",scope="repository:amp/x:pull"`)
		http.Error(w, "auth", http.StatusUnauthorized)
	}))
	defer reg.Close()
	host := strings.TrimPrefix(reg.URL, "http://")
	tlsCfg := internal.Client().Transport.(*http.Transport).TLSClientConfig.Clone()
	o := ocitransport.Options{PlainHTTP: true, TLS: tlsCfg,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if addr == host {
				return (&net.Dialer{}).DialContext(ctx, network, addr)
			}
			return (&net.Dialer{}).DialContext(ctx, network, strings.TrimPrefix(internal.URL, "https://")) // "example.com:443" is the internal host
		}}
	ep := mustOpen(t, "oci://"+host+"/amp/x", o, ocitransport.ReadOnly)
	_, err := ep.Resolve(context.Background(), "v1")
	mu.Lock()
	defer mu.Unlock()
	if len(reached) > 0 {
		t.Fatalf("the registry's realm made the client GET %v on another host (resolve: %v)", reached, err)
	}
}

// TestHostileRegistryRealmElsewhereNeedsAllowAuthHost: a token realm on
// another host (Docker Hub's shape: registry-1.docker.io, realm on
// auth.docker.io) is dialed only when the operator named it with
// --allow-auth-host; otherwise the refusal names the host and the
// option, Options.AllowAuthHosts (the CLI's flag is the CLI's to name,
// OCI-25), and nothing reaches the realm (OCI-12).
func TestHostileRegistryRealmElsewhereNeedsAllowAuthHost(t *testing.T) {
	var reached atomic.Int64
	realm := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"token":"abcdefghijklmnop"}`))
	}))
	defer realm.Close()
	realmHost := strings.TrimPrefix(realm.URL, "https://")
	reg := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="`+realm.URL+`/token",service="reg",scope="repository:amp/x:pull"`)
		http.Error(w, "auth", http.StatusUnauthorized)
	}))
	defer reg.Close()
	tlsCfg := realm.Client().Transport.(*http.Transport).TLSClientConfig.Clone()
	for _, tc := range []struct {
		name  string
		allow []string
		want  int64
	}{
		{"not allowed", nil, 0},
		{"allowed by host and port", []string{realmHost}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reached.Store(0)
			o := ocitransport.Options{PlainHTTP: true, TLS: tlsCfg, AllowAuthHosts: tc.allow}
			ep := mustOpen(t, "oci://"+strings.TrimPrefix(reg.URL, "http://")+"/amp/x", o, ocitransport.ReadOnly)
			_, err := ep.Resolve(context.Background(), "v1")
			if got := reached.Load(); (got > 0) != (tc.want > 0) {
				t.Fatalf("the realm was reached %d times (resolve: %v)", got, err)
			}
			var hint *ocitransport.OptionHint
			if tc.want == 0 && (nameOf(err) != string(ocitransport.ErrAuthHost) || !strings.Contains(err.Error(), "Options.AllowAuthHosts") ||
				!errors.As(err, &hint) || hint.Field != ocitransport.OptionAllowAuthHosts || hint.Host != "127.0.0.1") {
				t.Fatalf("a realm on a host not allowed: %v", err)
			}
		})
	}
}

// TestHostileRegistryOversizedStatementManifestIsNotFetched: a referrer
// claiming a statement manifest over MaxStatementManifestSize (a genuine
// one is under 1 KiB) is skipped as oci_manifest_too_large without being
// fetched (OCI-13).
func TestHostileRegistryOversizedStatementManifestIsNotFetched(t *testing.T) {
	h := newHostileRegistry(t, "faithful")
	fake := digest.FromString("big")
	entry := fmt.Sprintf(`{"mediaType":%q,"digest":%q,"size":%d,"artifactType":%q}`, ocispec.MediaTypeImageManifest, fake, ocitransport.MaxStatementManifestSize+1, ocitransport.ArtifactTypeRevocation)
	var gets atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch p := r.URL.Path; {
		case strings.HasPrefix(p, "/v2/amp/x/referrers/"):
			w.Header().Set("Content-Type", ocispec.MediaTypeImageIndex)
			w.Write([]byte(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[` + entry + `]}`))
		case p == "/v2/amp/x/manifests/"+fake.String():
			gets.Add(1)
			http.NotFound(w, r)
		default:
			h.serve(w, r)
		}
	}))
	defer srv.Close()
	ep := mustOpen(t, "oci://"+strings.TrimPrefix(srv.URL, "http://")+"/amp/x", ocitransport.Options{PlainHTTP: true}, ocitransport.ReadOnly)
	a, err := ep.Resolve(context.Background(), "v1")
	if err != nil {
		t.Fatal(err)
	}
	out, skipped, err := ep.StatementsSkipping(context.Background(), a)
	if err != nil || len(out) != 0 || len(skipped) != 1 || nameOf(skipped[0]) != string(ocitransport.ErrManifestTooBig) || gets.Load() != 0 {
		t.Fatalf("a %d-byte statement manifest: %d statements, skipped %v, err %v, %d fetches", ocitransport.MaxStatementManifestSize+1, len(out), skipped, err, gets.Load())
	}
}

// TestLayoutRetagReplacesIndexKeepingTheOldManifest: index.json is
// written by replace (never through a link); a tag moved to another
// manifest names only the new one, and the old manifest stays listed,
// untagged (with its statements still found by subject), as oras-go
// writes it (OCI-15).
func TestLayoutRetagReplacesIndexKeepingTheOldManifest(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "layout")
	ep := mustOpen(t, "oci-layout:"+dir, ocitransport.Options{}, ocitransport.ReadWrite)
	old := pushSample(t, ep, "v1")
	if _, err := ep.PushStatement(context.Background(), signedStatement(t, bundle.MediaTypeRevocation), old); err != nil {
		t.Fatal(err)
	}
	held, err := os.Open(filepath.Join(dir, "index.json")) // held open: its inode is not reused
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	before, err := held.Stat()
	if err != nil {
		t.Fatal(err)
	}
	cut := mustOpen(t, "oci-layout:"+dir, ocitransport.Options{MaxLayerSize: 1024}, ocitransport.ReadWrite)
	moved := pushSample(t, cut, "v1")
	after, err := os.Stat(filepath.Join(dir, "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	if os.SameFile(before, after) {
		t.Fatal("index.json was rewritten in place, not replaced")
	}
	raw, err := os.ReadFile(filepath.Join(dir, "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	var idx ocispec.Index
	if err := json.Unmarshal(raw, &idx); err != nil {
		t.Fatal(err)
	}
	tagged, untagged := map[string]digest.Digest{}, map[digest.Digest]bool{}
	for _, d := range idx.Manifests {
		if ref, ok := d.Annotations[ocispec.AnnotationRefName]; ok {
			if _, twice := tagged[ref]; twice {
				t.Fatalf("tag %s listed twice: %s", ref, raw)
			}
			tagged[ref] = d.Digest
		} else {
			untagged[d.Digest] = true
		}
	}
	if tagged["v1"] != moved.Descriptor.Digest || !untagged[old.Descriptor.Digest] || len(untagged) != 2 {
		t.Fatalf("after moving v1: %s", raw)
	}
	check := mustOpen(t, "oci-layout:"+dir, ocitransport.Options{}, ocitransport.ReadOnly)
	a, err := check.Resolve(context.Background(), old.Descriptor.Digest.String())
	if err != nil {
		t.Fatal(err)
	}
	if stmts, err := check.Statements(context.Background(), a); err != nil || len(stmts) != 1 {
		t.Fatalf("the old manifest's statements: %d, %v", len(stmts), err)
	}
}

// dripStatus answers status (with Location when loc is set) and a body of
// n bytes, one byte every 100 ms, until the client goes away: "{" then
// spaces, a JSON error body a decoder keeps reading.
func dripStatus(w http.ResponseWriter, r *http.Request, status int, loc string, n int) {
	w.Header().Set("Content-Type", "application/json")
	if loc != "" {
		w.Header().Set("Location", loc)
	}
	w.WriteHeader(status)
	w.(http.Flusher).Flush()
	for i := range n {
		select {
		case <-r.Context().Done():
			return
		case <-time.After(100 * time.Millisecond):
		}
		c := byte(' ')
		if i == 0 {
			c = '{'
		}
		w.Write([]byte{c})
		w.(http.Flusher).Flush()
	}
}

// TestHostileRegistryBlobGETNonBlobAnswerIsTimeBound: a blob GET is
// left to its blobReader, whose rate clock starts only once oras-go's
// Fetch returned a 200 answer. Every other answer to that GET (the error
// body oras-go parses, the body net/http slurps from a redirect) must be
// bounded in time too, or a hostile registry holds the client until
// --timeout (10 min) instead of the grace plus the minimum rate (OCI-10,
// OCI-11). Each must end as oci_too_slow as a trickled tag list does:
// within moments (the grace, 0.3 s); the test allows 10 s for a loaded
// machine, far below the 40 s the trickled body takes whole.
func TestHostileRegistryBlobGETNonBlobAnswerIsTimeBound(t *testing.T) {
	for _, tc := range []struct {
		name     string
		status   int
		redirect bool
	}{
		{"500 with a trickled error body", http.StatusInternalServerError, false},
		{"307 with a trickled body", http.StatusTemporaryRedirect, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := ocitransport.Options{Grace: 300 * time.Millisecond, MinDataRate: 1024}
			ep := registryAnswering(t, o, "/v2/amp/x/blobs/", true, func(w http.ResponseWriter, r *http.Request) {
				loc := ""
				if tc.redirect {
					loc = r.URL.Path + "?hop=2"
				}
				dripStatus(w, r, tc.status, loc, 400)
			})
			a, err := ep.Resolve(context.Background(), "v1")
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- ep.WriteBundle(ctx, a, &countWriter{}) }()
			select {
			case err := <-done:
				if nameOf(err) != string(ocitransport.ErrTooSlow) {
					t.Fatalf("a blob GET answered %d with a trickled body (10 B/s; grace 0.3 s, 1024 B/s): %v", tc.status, err)
				}
			case <-time.After(10 * time.Second):
				cancel()
				<-done
				t.Fatalf("still reading the trickled body of a %d answer to a blob GET after 10 s (grace 0.3 s, min rate 1024 B/s): it escaped the time bound", tc.status)
			}
		})
	}
}

// TestHostileConcurrentLayoutPushesKeepBothTags: two writers of one
// layout folder at once (two operators, a cron job and an operator), each
// opened before the other pushed: were index.json written from the copy
// each read at open, the later rename would drop the tag the other wrote
// while both report success. Each push must keep the other's tag (the
// lock file and the re-read under it, OCI-14).
func TestHostileConcurrentLayoutPushesKeepBothTags(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "layout")
	first := mustOpen(t, "oci-layout:"+dir, ocitransport.Options{}, ocitransport.ReadWrite)
	second := mustOpen(t, "oci-layout:"+dir, ocitransport.Options{}, ocitransport.ReadWrite)
	pushSample(t, first, "a")
	pushSample(t, second, "b")
	first.Close()
	second.Close()
	check := mustOpen(t, "oci-layout:"+dir, ocitransport.Options{}, ocitransport.ReadOnly)
	tags, err := check.Tags(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(tags, "a") || !slices.Contains(tags, "b") {
		t.Fatalf("two pushes that both succeeded left the tags %q in the layout (want a and b): the later index.json replaced the other's", tags)
	}
}

// TestHostileLayoutCopyRerunAfterCrashKeepsRevocation: OCI-14 says what a
// failed copy landed is reused by a rerun. A copy killed between a
// statement manifest's blob landing (oras-go writes it first) and the
// index.json replace leaves that manifest's file in blobs/sha256 with no
// index entry. Were "exists" the file's presence, the rerun would neither
// push nor list it, tag the bundle and report the statement copied, while
// a layout reader (oras-go's referrers come from index.json) finds no
// revocation: across the air gap the bundle would import as never
// revoked. A manifest exists in a layout only when index.json lists it.
func TestHostileLayoutCopyRerunAfterCrashKeepsRevocation(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	srcDir, dstDir := filepath.Join(dir, "src"), filepath.Join(dir, "dst")
	w := mustOpen(t, "oci-layout:"+srcDir, ocitransport.Options{}, ocitransport.ReadWrite)
	b := pushSample(t, w, "v1")
	if _, err := w.PushStatement(ctx, signedStatement(t, bundle.MediaTypeRevocation), b); err != nil {
		t.Fatal(err)
	}
	w.Close()
	src := mustOpen(t, "oci-layout:"+srcDir, ocitransport.Options{}, ocitransport.ReadOnly)
	dst := mustOpen(t, "oci-layout:"+dstDir, ocitransport.Options{}, ocitransport.ReadWrite)
	if _, _, err := ocitransport.Copy(ctx, src, "v1", dst, "v1"); err != nil {
		t.Fatal(err)
	}
	dst.Close()
	// The state a kill leaves after the statement manifest's blob landed,
	// before its index.json replace: the bundle's manifest listed
	// untagged, nothing else.
	crashed := ocispec.Index{Manifests: []ocispec.Descriptor{{MediaType: ocispec.MediaTypeImageManifest, Digest: b.Descriptor.Digest, Size: b.Descriptor.Size, ArtifactType: ocitransport.ArtifactTypeBundle}}}
	crashed.SchemaVersion = 2
	raw, _ := json.Marshal(crashed)
	if err := os.WriteFile(filepath.Join(dstDir, "index.json"), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	rerun := mustOpen(t, "oci-layout:"+dstDir, ocitransport.Options{}, ocitransport.ReadWrite)
	_, n, err := ocitransport.Copy(ctx, src, "v1", rerun, "v1")
	if err != nil {
		t.Fatalf("the rerun: %v", err)
	}
	rerun.Close()
	check := mustOpen(t, "oci-layout:"+dstDir, ocitransport.Options{}, ocitransport.ReadOnly)
	a, err := check.Resolve(ctx, "v1")
	if err != nil {
		t.Fatalf("the rerun (%d statements copied) left no tag v1: %v", n, err)
	}
	stmts, err := check.Statements(ctx, a)
	if err != nil || len(stmts) != 1 {
		t.Fatalf("the rerun reported %d statement copied and tagged v1, but the layout lists %d statements of it (%v): the revocation is lost", n, len(stmts), err)
	}
}

// TestHonestDockerHubNamedDockerIOIsPulled: oras-go sends every request
// of oci://docker.io/… to registry-1.docker.io (registry.Reference.Host).
// Were the round tripper's registry the name the operator wrote, the
// OCI-12 check would refuse the very first request as
// oci_auth_host_refused, and with --allow-auth-host no blob would be
// classified as one (OCI-11), each cut at 256 KiB. The registry's own
// host must be oras-go's. (The dial is sent to a local faithful registry;
// plain HTTP named.)
func TestHonestDockerHubNamedDockerIOIsPulled(t *testing.T) {
	h := newHostileRegistry(t, "faithful")
	o := ocitransport.Options{
		PlainHTTPHosts: []string{"docker.io", "registry-1.docker.io"},
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, h.host())
		},
	}
	ep := mustOpen(t, "oci://docker.io/amp/x", o, ocitransport.ReadOnly)
	a, err := ep.Resolve(context.Background(), "v1")
	if err != nil {
		t.Fatalf("resolving v1 on oci://docker.io/amp/x (oras-go asks registry-1.docker.io): %v", err)
	}
	if err := ep.WriteBundle(context.Background(), a, &countWriter{}); err != nil {
		t.Fatalf("pulling v1's file from oci://docker.io/amp/x: %v", err)
	}
}

// TestLayoutTarWrittenHoldsNoLockFile: a tar is built in a layout folder,
// under its lock file (OCI-14); the tar carried across the air gap holds
// the layout only (docs/FORMAT.md, "Layout tars"), not the writer's lock.
func TestLayoutTarWrittenHoldsNoLockFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "out.tar")
	w := mustOpen(t, "oci-layout:"+p, ocitransport.Options{}, ocitransport.ReadWrite)
	pushSample(t, w, "v1")
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	var names []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		if !slices.Contains([]string{"blobs/", "blobs/sha256/", "index.json", "oci-layout"}, h.Name) && !strings.HasPrefix(h.Name, "blobs/sha256/") {
			t.Errorf("the tar holds %q, not a layout member", h.Name)
		}
	}
	if !slices.Contains(names, "index.json") {
		t.Fatalf("the tar holds no index.json: %q", names)
	}
}

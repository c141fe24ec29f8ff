package ocitransport_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/ocitransport"
)

// TestTagListLinkToBlobPathKeepsPageBounds: the next-page Link of a tag
// list is the registry's to write; oras-go keeps it on the same origin but
// takes any path. A Link to "/v2/REPO/blobs/sha256:…" must not make the
// next page a blob GET (whose 200 answer is left to a blobReader that
// nothing opened here): a page reached by a Link is bounded as a tag page
// (MaxTagPageSize, oci_too_many; the rate, oci_too_slow) whatever path the
// Link names, since a request is a blob GET only when openBlob made it
// (docs/SPEC-DECISIONS.md OCI-11, amended). Without that, a page trickled
// at 1 byte/s is read until the caller's deadline and a 3 MiB page is
// accepted.
func TestTagListLinkToBlobPathKeepsPageBounds(t *testing.T) {
	blobPath := "/v2/amp/x/blobs/sha256:" + strings.Repeat("ab", 32)
	big := `{"name":"amp/x","tags":["v1"` + strings.Repeat(`,"v1"`, (3<<20)/5) + `]}`
	trickled := func(w http.ResponseWriter, r *http.Request, stop <-chan struct{}) {
		trickle(w, r, `{"name":"amp/x","tags":["v2","v3","v4"]}`, stop)
	}
	huge := func(w http.ResponseWriter, r *http.Request, stop <-chan struct{}) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(big))
	}
	for _, tc := range []struct {
		name, next string
		page       func(w http.ResponseWriter, r *http.Request, stop <-chan struct{})
		want       amp.ErrName
	}{
		{"trickled page, Link to the tag list (control)", "/v2/amp/x/tags/list", trickled, ocitransport.ErrTooSlow},
		{"trickled page, Link to a blob path", blobPath, trickled, ocitransport.ErrTooSlow},
		{"3 MiB page, Link to the tag list (control)", "/v2/amp/x/tags/list", huge, ocitransport.ErrTooMany},
		{"3 MiB page, Link to a blob path", blobPath, huge, ocitransport.ErrTooMany},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stop := make(chan struct{})
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				switch {
				case r.URL.Path == "/v2/":
				case r.URL.Path == tc.next && r.URL.Query().Get("p") == "2":
					tc.page(w, r, stop)
				case r.URL.Path == "/v2/amp/x/tags/list":
					w.Header().Set("Content-Type", "application/json")
					w.Header().Set("Link", `<`+tc.next+`?p=2>; rel="next"`)
					w.Write([]byte(`{"name":"amp/x","tags":["v1"]}`))
				default:
					http.NotFound(w, r)
				}
			}))
			defer srv.Close()
			defer close(stop)
			err := listLinked(t, srv.URL, "tag", func(ctx context.Context, ep *ocitransport.Endpoint) error {
				_, err := ep.Tags(ctx)
				return err
			})
			if nameOf(err) != string(tc.want) {
				t.Fatalf("a tag page reached by a Link to a blob path: got %q (%v), want %s", nameOf(err), err, tc.want)
			}
		})
	}
}

// TestReferrersLinkToBlobPathKeepsTimeBound: the same Link on the
// referrers API. A first page with no referrers and a Link to
// "/v2/REPO/blobs/sha256:…": the next page is a referrers page, bounded by
// MaxReferrersPageSize and the minimum data rate (oci_too_slow, as on the
// API's own path), not a blob GET left to oras-go's MaxMetadataBytes and
// the caller's deadline.
func TestReferrersLinkToBlobPathKeepsTimeBound(t *testing.T) {
	subject := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: digest.FromString("bundle"), Size: 100}
	blobPath := "/v2/amp/x/blobs/sha256:" + strings.Repeat("cd", 32)
	for _, tc := range []struct{ name, next string }{
		{"Link to the referrers API (control)", "/v2/amp/x/referrers/" + subject.Digest.String()},
		{"Link to a blob path", blobPath},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stop := make(chan struct{})
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				switch {
				case r.URL.Path == "/v2/":
				case r.URL.Path == tc.next && r.URL.Query().Get("p") == "2":
					trickleAs(w, r, ocispec.MediaTypeImageIndex, `{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[]}`, stop)
				case strings.HasPrefix(r.URL.Path, "/v2/amp/x/referrers/"):
					w.Header().Set("Content-Type", ocispec.MediaTypeImageIndex)
					w.Header().Set("Link", `<`+tc.next+`?p=2>; rel="next"`)
					w.Write([]byte(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[]}`))
				default:
					http.NotFound(w, r)
				}
			}))
			defer srv.Close()
			defer close(stop)
			err := listLinked(t, srv.URL, "referrers", func(ctx context.Context, ep *ocitransport.Endpoint) error {
				_, err := ep.Statements(ctx, &ocitransport.Artifact{Descriptor: subject, Kind: ocitransport.KindBundle})
				return err
			})
			if nameOf(err) != string(ocitransport.ErrTooSlow) {
				t.Fatalf("a referrers page reached by a Link: got %q (%v), want %s", nameOf(err), err, ocitransport.ErrTooSlow)
			}
		})
	}
}

// listLinked runs list on the registry at url (plain HTTP, a 0.3 s grace,
// a 1 KiB/s minimum rate) and returns its error; one still reading after
// 10 s fails the test: a page of the listing what escaped the time bound
// (a bounded page ends within moments, an unbounded one is read until
// the caller's deadline, 20 s; 10 s leaves room for a loaded machine).
func listLinked(t *testing.T, url, what string, list func(context.Context, *ocitransport.Endpoint) error) error {
	t.Helper()
	o := ocitransport.Options{PlainHTTP: true, Grace: 300 * time.Millisecond, MinDataRate: 1024}
	ep := mustOpen(t, "oci://"+strings.TrimPrefix(url, "http://")+"/amp/x", o, ocitransport.ReadOnly)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- list(ctx, ep) }()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		cancel()
		<-done
		t.Fatalf("still reading a 1-byte-per-second %s page after 10 s (grace 0.3 s, min rate 1024 B/s): a Link to a blob path escaped the time bound", what)
		return nil
	}
}

// trickleAs is trickle with the answer's Content-Type.
func trickleAs(w http.ResponseWriter, r *http.Request, contentType, body string, stop <-chan struct{}) {
	trickle(typedWriter{w, contentType}, r, body, stop)
}

// typedWriter sends its answer with the Content-Type ct.
type typedWriter struct {
	http.ResponseWriter
	ct string
}

func (w typedWriter) WriteHeader(code int) {
	w.Header().Set("Content-Type", w.ct)
	w.ResponseWriter.WriteHeader(code)
}

func (w typedWriter) Flush() { w.ResponseWriter.(http.Flusher).Flush() }

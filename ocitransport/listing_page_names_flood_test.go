package ocitransport_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/ampbundle/ampbundle/internal/testalloc"
	"github.com/ampbundle/ampbundle/ocitransport"
)

// TestListingPageNamingTensOfThousandsIsRefusedBeforeItIsDecoded: the
// page bounds (MaxReferrersPageSize, MaxTagPageSize) bound a page's bytes,
// and the listings refuse more than MaxReferrers referrers or
// ListedTagsPerKept × MaxTags tag names, but only once oras-go has
// decoded the page whole: a 512 KiB referrers page of "{}," is 174,743
// descriptors, 116 MB allocated, and a 2 MiB tag page of `"",` 699,031
// names, 67 MB, for each listing (a sync lists referrers once per
// bundle). The names are now counted as the page arrives and the page is
// refused, oci_too_many, past the bound, before it is decoded: the
// listing allocates a few MB at most. A page at the bound is read as
// before (docs/SPEC-DECISIONS.md OCI-38).
func TestListingPageNamingTensOfThousandsIsRefusedBeforeItIsDecoded(t *testing.T) {
	subject := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: digest.FromString("bundle"), Size: 100}
	page := func(member string, elem string, n int) string {
		return `{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","` + member + `":[` +
			strings.TrimSuffix(strings.Repeat(elem+",", n), ",") + `]}`
	}
	referrers := func(ctx context.Context, ep *ocitransport.Endpoint) error {
		_, err := ep.Statements(ctx, &ocitransport.Artifact{Descriptor: subject, Kind: ocitransport.KindBundle})
		return err
	}
	tags := func(ctx context.Context, ep *ocitransport.Endpoint) error {
		_, err := ep.Tags(ctx)
		return err
	}
	const maxAlloc = 16 << 20
	for _, c := range []struct {
		name, body string
		list       func(context.Context, *ocitransport.Endpoint) error
		want       string
	}{
		{"referrers: 174,743 empty descriptors", page("manifests", "{}", (512<<10)/3-40), referrers, string(ocitransport.ErrTooMany)},
		{"referrers: MaxReferrers + 1", page("manifests", "{}", ocitransport.MaxReferrers+1), referrers, string(ocitransport.ErrTooMany)},
		{"referrers: MaxReferrers (control)", page("manifests", "{}", ocitransport.MaxReferrers), referrers, ""},
		{"tags: 699,000 empty names", page("tags", `""`, 699000), tags, string(ocitransport.ErrTooMany)},
		{"tags: 40,001 names", page("tags", `"v1"`, ocitransport.ListedTagsPerKept*ocitransport.DefaultMaxTags+1), tags, string(ocitransport.ErrTooMany)},
		{"tags: 40,000 names (control)", page("tags", `"v1"`, ocitransport.ListedTagsPerKept*ocitransport.DefaultMaxTags), tags, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				switch {
				case r.URL.Path == "/v2/":
				case strings.HasPrefix(r.URL.Path, "/v2/amp/x/referrers/"):
					w.Header().Set("Content-Type", ocispec.MediaTypeImageIndex)
					w.Write([]byte(c.body))
				case r.URL.Path == "/v2/amp/x/tags/list":
					w.Header().Set("Content-Type", "application/json")
					w.Write([]byte(c.body))
				default:
					http.NotFound(w, r)
				}
			}))
			defer srv.Close()
			var err error // each listing through an endpoint of its own
			got := testalloc.Least(func() { err = listLinked(t, srv.URL, "flooded", c.list) })
			if nameOf(err) != c.want {
				t.Fatalf("got %q (%v), want %q", nameOf(err), err, c.want)
			}
			if c.want != "" {
				if got > maxAlloc {
					t.Errorf("the refused page cost %d bytes allocated, want at most %d", got, maxAlloc)
				}
			}
		})
	}
}

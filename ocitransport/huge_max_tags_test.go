package ocitransport_test

import (
	"context"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/ocitransport"
)

// TestEmbedderMaxTagsPastAQuarterOfMaxIntStillListsTags: an embedder
// that sets Options.MaxTags to "no practical bound" (math.MaxInt / 2)
// had the names a listing reads, ListedTagsPerKept × MaxTags (OCI-23),
// wrap negative: every listing was refused, oci_too_many, at its first
// name, and the registry's page bound computed from it fell to one page
// (threat: a bound that overflows into a refusal of everything, or, with
// other values, into no bound at all). Expected: MaxTags is capped where
// every bound computed from it stays positive, and the repository's one
// tag is listed.
func TestEmbedderMaxTagsPastAQuarterOfMaxIntStillListsTags(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/tags/list") {
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"name":"amp/x","tags":["v1"]}`))
			return
		}
		http.NotFound(w, r)
	}))
	defer srv.Close()
	for _, max := range []int{math.MaxInt / 2, math.MaxInt} {
		ep := mustOpen(t, "oci://"+strings.TrimPrefix(srv.URL, "http://")+"/amp/x", ocitransport.Options{PlainHTTP: true, MaxTags: max}, ocitransport.ReadOnly)
		tags, err := ep.Tags(context.Background())
		if err != nil || !slices.Equal(tags, []string{"v1"}) {
			t.Fatalf("MaxTags %d: %v, %v; want the repository's one tag", max, tags, err)
		}
	}
}

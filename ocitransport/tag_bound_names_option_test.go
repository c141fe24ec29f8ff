package ocitransport_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/ocitransport"
)

// TestLibraryTagBoundNamesItsOwnOption: the library's refusal of more
// tags than Options.MaxTags named the ampbundle CLI's --tag-pattern, a
// flag an embedder's users do not have. It names the library's own bound
// and carries ErrTagsOverMax, on which a caller adds its own hint (the
// CLI's sync names --tag-pattern) (docs/SPEC-DECISIONS.md OCI-24).
func TestLibraryTagBoundNamesItsOwnOption(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/tags/list") {
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"name":"amp/x","tags":["v1","v2","v3"]}`))
			return
		}
		http.NotFound(w, r)
	}))
	defer srv.Close()
	ep := mustOpen(t, "oci://"+strings.TrimPrefix(srv.URL, "http://")+"/amp/x", ocitransport.Options{PlainHTTP: true, MaxTags: 2}, ocitransport.ReadOnly)
	_, err := ep.TagsWhere(t.Context(), nil)
	if nameOf(err) != string(ocitransport.ErrTooMany) || !errors.Is(err, ocitransport.ErrTagsOverMax) {
		t.Fatalf("3 tags past MaxTags 2: %v, want %s caused by ErrTagsOverMax", err, ocitransport.ErrTooMany)
	}
	if msg := err.Error(); strings.Contains(msg, "--") || !strings.Contains(msg, "MaxTags") {
		t.Errorf("the library's refusal names a CLI flag, or not its own bound: %q", msg)
	}
}

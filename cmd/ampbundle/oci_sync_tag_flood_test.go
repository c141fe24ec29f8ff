package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/ocitransport"
)

// TestCoTenantTagFloodLeavesAPatternedSyncItsBundles: the attack. A
// co-tenant who may push tags to the repository a site syncs from pushes
// more than MaxTags (10,000) tags under names of their own, all listed
// before the publisher's. Before review 106 the sync counted every name
// the registry listed against MaxTags before --tag-pattern was applied:
// every sync of the repository failed, oci_too_many, and the remedy the
// refusal names (narrow --tag-pattern) changed nothing. Names the pattern
// refuses are now read and dropped, not counted (up to 4 × MaxTags names
// read in all, docs/SPEC-DECISIONS.md OCI-23): the patterned sync installs
// the genuine version; an unpatterned one is refused, oci_too_many,
// naming --tag-pattern.
func TestCoTenantTagFloodLeavesAPatternedSyncItsBundles(t *testing.T) {
	dir, _ := layoutOfTwoVersions(t)
	lr := &layoutRegistry{dir: dir, sent: map[string]int64{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v2/amp/x/tags/list" {
			lr.serve(w, r)
			return
		}
		tags := make([]string, 0, ocitransport.DefaultMaxTags+3)
		for i := range ocitransport.DefaultMaxTags + 1 {
			tags = append(tags, fmt.Sprintf("flood-%05d", i))
		}
		json.NewEncoder(w).Encode(map[string]any{"name": "amp/x", "tags": append(tags, "v1", "v2")})
	}))
	defer srv.Close()
	src := "oci://" + strings.TrimPrefix(srv.URL, "http://") + "/amp/x"

	db := newStore(t)
	r := runCLI(t, nil, "sync", src, "--plain-http", "--db", db, "--tag-pattern", "v*", "--json")
	if v := installed(t, db, translateID); v != 2 {
		t.Fatalf("a sync narrowed to v* under a flood of %d other tags installed version %d, want 2\n%s%s", ocitransport.DefaultMaxTags+1, v, r.stdout, r.stderr)
	}
	r = runCLI(t, nil, "sync", src, "--plain-http", "--db", newStore(t), "--json")
	if out := r.stdout + r.stderr; !strings.Contains(out, string(ocitransport.ErrTooMany)) || !strings.Contains(out, "--tag-pattern") {
		t.Fatalf("an unnarrowed sync under the flood: want %s naming --tag-pattern, got\n%s", ocitransport.ErrTooMany, out)
	}
}

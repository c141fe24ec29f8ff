package ocitransport_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/ocitransport"
)

// maxTagListBytes is the bytes a default tag listing's pages may hold in
// all (docs/SPEC-DECISIONS.md OCI-39): TagListBytesPerName for each of the
// ListedTagsPerKept × DefaultMaxTags names it reads, and one page.
const maxTagListBytes = ocitransport.ListedTagsPerKept*ocitransport.DefaultMaxTags*ocitransport.TagListBytesPerName +
	ocitransport.MaxTagPageSize

// defaultTagListPages is the page bound of a default listing (OCI-23).
const defaultTagListPages = ocitransport.ListedTagsPerKept*ocitransport.DefaultMaxTags/1000 + 1

// tagPager is a registry of the test serving only a tag listing: page i
// (from 0) is page(i), followed by a Link to page i+1 unless it is the
// last; each page request takes step on clock (nil: none).
type tagPager struct {
	clock *stepClock
	step  time.Duration
	page  func(i int) (body string, last bool)

	pages, bytes atomic.Int64
}

func (p *tagPager) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v2/amp/x/tags/list" {
		http.Error(w, `{"errors":[{"code":"NAME_UNKNOWN"}]}`, http.StatusNotFound)
		return
	}
	if p.clock != nil {
		p.clock.add(p.step)
	}
	i, _ := strconv.Atoi(r.URL.Query().Get("page"))
	p.pages.Add(1)
	body, last := p.page(i)
	w.Header().Set("Content-Type", "application/json")
	if !last {
		w.Header().Set("Link", fmt.Sprintf(`</v2/amp/x/tags/list?n=1000&page=%d>; rel="next"`, i+1))
	}
	n, _ := w.Write([]byte(body))
	p.bytes.Add(int64(n))
}

// tagPage is a page naming names, one to a line, indented as a
// pretty-printing registry writes it, and pad spaces before its end.
func tagPage(names []string, pad int) string {
	return `{"name": "amp/x", "tags": [` + "\n    \"" + strings.Join(names, "\",\n    \"") + "\"" +
		strings.Repeat(" ", pad) + "\n]}"
}

// longTag is the ith tag of 128 bytes, the longest a tag may be.
func longTag(i int) string {
	s := fmt.Sprintf("t%d-", i)
	return s + strings.Repeat("x", 128-len(s))
}

// TestTagListingWhosePagesTheRegistryHoldsIsRefusedOnOneClock: a tag
// listing reads up to TagListMaxPages pages (41 by default), each its
// own GET with its own 60 s header wait, 30 s grace and up to 2 MiB at
// the minimum rate: a registry taking 59 s over each page, one name on
// each, held a sync's listing 41 × 59 s (some 72 minutes with each
// page's grace and bytes) before the page bound refused it, and only
// --timeout stopped it sooner. The pages of one listing now share one
// clock (one header wait, the grace, the listing's bytes in all at the
// minimum rate, TagPageAllowance a page): past it the next page is not
// asked for, oci_too_slow (docs/SPEC-DECISIONS.md OCI-39). The largest
// listing a default sync reads (40 pages of 1,000 names of 128 bytes,
// pretty-printed, one name in four kept) from an honest registry 300 ms
// away (0.9 s a page), or from a slow one (9 s a page), is read whole.
func TestTagListingWhosePagesTheRegistryHoldsIsRefusedOnOneClock(t *testing.T) {
	budget := 90*time.Second + defaultTagListPages*ocitransport.TagPageAllowance +
		time.Duration(maxTagListBytes)*time.Second/ocitransport.DefaultMinDataRate
	const honestPages = ocitransport.ListedTagsPerKept * ocitransport.DefaultMaxTags / 1000
	honest := func(i int) (string, bool) {
		names := make([]string, 1000)
		for j := range names {
			names[j] = longTag(i*1000 + j)
		}
		return tagPage(names, 0), i == honestPages-1
	}
	held := func(i int) (string, bool) { return tagPage([]string{fmt.Sprintf("t%d", i)}, 0), false }
	for _, tc := range []struct {
		name      string
		step      time.Duration
		page      func(int) (string, bool)
		wantPages int64 // 0: every page, and the tags kept
	}{
		{"a registry that holds each page 59 s", 59 * time.Second, held, layersWithin(budget, 59*time.Second)},
		{"an honest registry 300 ms away, the largest listing", 900 * time.Millisecond, honest, 0},
		{"a slow honest registry, 9 s a page, the largest listing", 9 * time.Second, honest, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := &stepClock{now: time.Now()}
			reg := &tagPager{clock: clock, step: tc.step, page: tc.page}
			srv := httptest.NewServer(reg)
			defer srv.Close()
			ep := mustOpen(t, "oci://"+strings.TrimPrefix(srv.URL, "http://")+"/amp/x",
				ocitransport.Options{PlainHTTP: true, Now: clock.Now}, ocitransport.ReadOnly)
			kept := 0
			tags, err := ep.TagsWhere(context.Background(), func(string) bool { kept++; return kept%4 == 0 })
			pages := reg.pages.Load()
			if tc.wantPages == 0 {
				if err != nil || pages != honestPages || len(tags) != ocitransport.DefaultMaxTags {
					t.Fatalf("an honest listing of %d pages: %v (%s), %d tags kept after %d pages", honestPages, err, nameOf(err), len(tags), pages)
				}
				if reg.bytes.Load() > maxTagListBytes {
					t.Fatalf("the honest listing is %d bytes, over the bound %d", reg.bytes.Load(), maxTagListBytes)
				}
				return
			}
			if nameOf(err) != string(ocitransport.ErrTooSlow) || pages != tc.wantPages {
				t.Errorf("a listing whose pages are each held %v (budget %v): %v (%s) after %d pages, want %s after %d",
					tc.step, budget, err, nameOf(err), pages, ocitransport.ErrTooSlow, tc.wantPages)
			}
		})
	}
}

// TestTagListingOfBigPagesNamingNothingIsRefusedByItsBytesInAll: each
// tag page is bounded on its own (MaxTagPageSize, 2 MiB) and the names
// of the listing in all (40,000), but not its bytes in all: a registry
// whose pages are nearly 2 MiB of spaces around one name each was read
// for all TagListMaxPages (41) pages, some 82 MiB at the registry's pace,
// before the page bound refused it. The pages of one listing now hold at
// most TagListBytesPerName for each name it reads and one page more
// (8,497,152 bytes by default): past it, oci_too_many, on the fifth such
// page (docs/SPEC-DECISIONS.md OCI-39).
func TestTagListingOfBigPagesNamingNothingIsRefusedByItsBytesInAll(t *testing.T) {
	const pad = ocitransport.MaxTagPageSize - 100
	reg := &tagPager{page: func(i int) (string, bool) { return tagPage([]string{fmt.Sprintf("t%d", i)}, pad), false }}
	srv := httptest.NewServer(reg)
	defer srv.Close()
	ep := mustOpen(t, "oci://"+strings.TrimPrefix(srv.URL, "http://")+"/amp/x", ocitransport.Options{PlainHTTP: true}, ocitransport.ReadOnly)
	_, err := ep.Tags(context.Background())
	pageSize := int64(len(tagPage([]string{"t0"}, pad)))
	want := maxTagListBytes/pageSize + 1 // the page that crosses the bound
	if pages := reg.pages.Load(); nameOf(err) != string(ocitransport.ErrTooMany) || pages != want {
		t.Errorf("pages of %d bytes naming one tag each: %v (%s) after %d pages, want %s after %d",
			pageSize, err, nameOf(err), pages, ocitransport.ErrTooMany, want)
	}
}

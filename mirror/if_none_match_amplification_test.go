package mirror

import (
	"net/http"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/internal/testalloc"
)

// TestIfNoneMatchListCostsMoreThanItsSize: every request carries an
// If-None-Match of 4096 bytes (the most notModified reads) made of
// commas. notModified split it with strings.Split, allocating a slice of
// 4097 strings, 64 KiB, for each 4 KiB the peer sent: 16 times its bytes
// in garbage, for every request on every route (threat: a conditional
// header whose parse costs more than its size). The list is now walked in
// place: no allocation that grows with the header.
func TestIfNoneMatchListCostsMoreThanItsSize(t *testing.T) {
	etag := `"sha-256:` + strings.Repeat("0", 64) + `"`
	for _, tc := range []struct {
		name, header string
		match        bool
	}{
		{"commas", strings.Repeat(",", 4096), false},
		{"many tags", strings.Repeat(`"x", `, 4096/5), false},
		{"a match at the end", strings.Repeat(`"x", `, 800) + "W/" + etag, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := http.NewRequest(http.MethodGet, "http://mirror"+IndexPath, nil)
			if err != nil {
				t.Fatal(err)
			}
			r.Header.Set("If-None-Match", tc.header)
			if got := notModified(r, etag); got != tc.match {
				t.Fatalf("notModified = %v, want %v", got, tc.match)
			}
			if per := testalloc.LeastPerRun(100, func() { notModified(r, etag) }); per > 512 {
				t.Fatalf("%d bytes allocated per If-None-Match of %d bytes: the list is copied", per, len(tc.header))
			}
		})
	}
}

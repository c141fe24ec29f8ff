package ocitransport

import (
	"net/http"
	"testing"
)

// TestOnlyWhatOrasReadsAsTheBlobIsLeftUnbounded: the round tripper leaves
// unread (to the blobReader) only the answer oras-go returns as the blob,
// a 200, or a 206 to a request for a range (its seek); a 206 to a request
// for the whole blob is parsed by oras-go as an error body and must be
// read by the round tripper, bounded (docs/SPEC-DECISIONS.md OCI-28).
func TestOnlyWhatOrasReadsAsTheBlobIsLeftUnbounded(t *testing.T) {
	for _, tc := range []struct {
		status int
		rng    string
		want   bool
	}{
		{http.StatusOK, "", true},
		{http.StatusOK, "bytes=10-", true},
		{http.StatusPartialContent, "bytes=10-", true},
		{http.StatusPartialContent, "", false},
		{http.StatusInternalServerError, "", false},
		{http.StatusTemporaryRedirect, "", false},
	} {
		req, err := http.NewRequest(http.MethodGet, "https://r.example/v2/amp/x/blobs/sha256:00", nil)
		if err != nil {
			t.Fatal(err)
		}
		if tc.rng != "" {
			req.Header.Set("Range", tc.rng)
		}
		if got := isBlobBody(req, &http.Response{StatusCode: tc.status}); got != tc.want {
			t.Errorf("a %d answer to a blob GET with Range %q: left to the blob reader %v, want %v", tc.status, tc.rng, got, tc.want)
		}
	}
}

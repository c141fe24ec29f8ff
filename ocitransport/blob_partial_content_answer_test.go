package ocitransport_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/ocitransport"
)

// TestHostileRegistryPartialContentAnswerToABlobGETIsTimeBound: a blob
// GET asks for the whole blob (no Range). oras-go's blob store takes only
// a 200 answer as the blob; any other, a 206 among them, is an error whose
// body it parses (up to 8 KiB of JSON) before it returns. The round
// tripper let a 206 through unread as if it were the blob, so no
// blobReader paced it and nothing bounded it in time: a registry that
// answered 206 and then trickled (or withheld) its body held the pull
// until --timeout (10 minutes; none with --timeout 0) instead of the
// grace plus the minimum rate (docs/SPEC-DECISIONS.md OCI-11, OCI-28).
// That is moments here (a grace of 0.3 s); the test allows 10 s for a
// loaded machine, far below the 40 s either answer holds an unbounded
// reader.
func TestHostileRegistryPartialContentAnswerToABlobGETIsTimeBound(t *testing.T) {
	for _, tc := range []struct {
		name  string
		serve func(w http.ResponseWriter, r *http.Request)
	}{
		{"206 with a trickled body", func(w http.ResponseWriter, r *http.Request) {
			dripStatus(w, r, http.StatusPartialContent, "", 400)
		}},
		{"206 whose body never comes", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusPartialContent)
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
			case <-time.After(40 * time.Second):
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := ocitransport.Options{Grace: 300 * time.Millisecond, MinDataRate: 1024}
			ep := registryAnswering(t, o, "/v2/amp/x/blobs/", true, tc.serve)
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
					t.Fatalf("a blob GET answered 206 (%s; grace 0.3 s, 1024 B/s): %v, want %s", tc.name, err, ocitransport.ErrTooSlow)
				}
			case <-time.After(10 * time.Second):
				cancel()
				<-done
				t.Fatalf("still reading a 206 answer to a blob GET after 10 s (%s; grace 0.3 s, min rate 1024 B/s): it escaped the time bound", tc.name)
			}
		})
	}
}

package ocitransport

import (
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/ampbundle/ampbundle/amp"
)

// zeros reads as endless zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// TestUploadTheRegistryNeverTakesIsRefusedAtTheMinimumRate: the attack.
// Every answer is paced (the grace, then the minimum rate, OCI-10), but
// not what the client sends: a registry that opens an upload and then
// takes its body at 1 B/s, or never (it reads nothing: the connection's
// buffers fill and the client's write waits), held a push, a copy or a
// sync until --timeout (10 minutes; for ever with --timeout 0 or an
// embedder's context without a deadline). A body the registry takes
// slower than the minimum rate after the grace now ends the request,
// oci_too_slow, before any deadline of the caller's
// (docs/SPEC-DECISIONS.md OCI-31). Both ways a blob is sent: the
// streamed upload of a bundle (PATCH) and oras-go's (a copy's: one PUT).
func TestUploadTheRegistryNeverTakesIsRefusedAtTheMinimumRate(t *testing.T) {
	const size = 1 << 30 // far past what the connection's buffers take
	for _, tc := range []struct {
		name string
		send func(ctx context.Context, e *Endpoint) error
	}{
		{"a bundle's streamed upload", func(ctx context.Context, e *Endpoint) error {
			return e.streamUpload(ctx, io.LimitReader(zeros{}, size), size, sha256.New())
		}},
		{"a copy's blob push", func(ctx context.Context, e *Endpoint) error {
			d := ocispec.Descriptor{MediaType: MediaTypeBundlePart, Digest: digest.FromString("never checked"), Size: size}
			if err := e.dst.Push(ctx, d, io.LimitReader(zeros{}, size)); err != nil {
				return wrap(err, "pushing a blob")
			}
			return nil
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stop := make(chan struct{})
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodPost {
					w.Header().Set("Location", "/v2/amp/x/blobs/uploads/u1")
					w.WriteHeader(http.StatusAccepted)
					return
				}
				select { // the body: never read
				case <-r.Context().Done():
				case <-stop:
				}
			}))
			t.Cleanup(srv.Close)
			t.Cleanup(func() { close(stop) })
			o := Options{PlainHTTP: true, Grace: 200 * time.Millisecond, MinDataRate: 1 << 30}
			e, err := Open(context.Background(), Location{Kind: KindRegistry, Registry: strings.TrimPrefix(srv.URL, "http://"), Repository: "amp/x"}, o, ReadWrite)
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			// The caller's own bound: long past the grace and the rate.
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			err = tc.send(ctx, e)
			var ae *amp.Error
			if !errors.As(err, &ae) || amp.NameOf(ae) != ErrTooSlow || errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("%s the registry never takes: %v, want %s for the minimum rate, not the caller's deadline", tc.name, err, ErrTooSlow)
			}
		})
	}
}

package ocitransport_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"oras.land/oras-go/v2/registry/remote/errcode"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/ocitransport"
)

// TestRegistryErrorTextIsNeverPrintedRawByTheError: oras-go turns a
// registry's error answer into an error whose text quotes the body's
// message and detail as sent, up to 8 KiB of any bytes, and the library
// kept that error as the cause of its own: amp.Error's Error() prints a
// cause by the cause's own Error(), so an embedder that logs or shows the
// error wrote the registry's terminal escapes, forged log lines and bidi
// overrides as its own (what docs/SPEC-DECISIONS.md TRANSPORT-21 rules
// out for every peer's text). Each request kind that fails on the
// registry's answer must print it escaped and bounded, and keep its error
// name and its cause for errors.Is/As (OCI-29).
func TestRegistryErrorTextIsNeverPrintedRawByTheError(t *testing.T) {
	forged := "\x1b[2J\x1b[31mok\r\nINFO pull done: org.example 9\u202e" + strings.Repeat("x", 7000)
	body, err := json.Marshal(map[string]any{"errors": []map[string]any{{"code": "DENIED", "message": forged, "detail": map[string]string{"why": forged[:40]}}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		path string // the request answered with the error
		call func(ctx context.Context, ep *ocitransport.Endpoint) error
	}{
		{"a tag listing", "/v2/amp/x/tags/list", func(ctx context.Context, ep *ocitransport.Endpoint) error {
			_, err := ep.Tags(ctx)
			return err
		}},
		{"a manifest", "/v2/amp/x/manifests/", func(ctx context.Context, ep *ocitransport.Endpoint) error {
			_, err := ep.Resolve(ctx, "v1")
			return err
		}},
		{"a blob", "/v2/amp/x/blobs/", func(ctx context.Context, ep *ocitransport.Endpoint) error {
			a, err := ep.Resolve(ctx, "v1")
			if err != nil {
				return err
			}
			return ep.WriteBundle(ctx, a, &countWriter{})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			ep := registryAnswering(t, ocitransport.Options{}, tc.path, false, jsonError(http.StatusInternalServerError, body))
			err := tc.call(ctx, ep)
			if nameOf(err) != string(ocitransport.ErrRegistry) {
				t.Fatalf("%s answered 500: %v, want %s", tc.name, err, ocitransport.ErrRegistry)
			}
			text := err.Error()
			if strings.ContainsAny(text, "\x1b\r\n\u202e") {
				t.Fatalf("%s answered 500: the error's text holds the registry's escapes, line breaks or bidi controls raw: %q", tc.name, text[:min(len(text), 200)])
			}
			if len(text) > 2*amp.MaxErrorText {
				t.Fatalf("%s answered 500: the error's text is %d bytes, the registry's 7 KiB message unbounded (want at most %d)", tc.name, len(text), 2*amp.MaxErrorText)
			}
			var resp *errcode.ErrorResponse
			if !errors.As(err, &resp) || resp.StatusCode != http.StatusInternalServerError {
				t.Fatalf("%s answered 500: the registry's error is no longer the cause (%v); it is kept for errors.Is and errors.As", tc.name, err)
			}
		})
	}
}

// jsonError answers status with the JSON error document body.
func jsonError(status int, body []byte) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		w.Write(body)
	}
}

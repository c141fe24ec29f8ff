package ocitransport_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/ampbundle/ampbundle/ocitransport"
)

// TestRegistryErrorTextCannotChooseTheErrorName: a blob's answer of
// another length than its descriptor is oci_size_mismatch, a verdict a
// sync keeps on the file (docs/SPEC-DECISIONS.md OCI-16); it was told
// from oras-go's error text alone, so a registry's 500 whose message
// ended in "mismatch Content-Length" was named so too. The registry's
// own error answer is now always oci_registry_error (OCI-29 amended).
func TestRegistryErrorTextCannotChooseTheErrorName(t *testing.T) {
	body, err := json.Marshal(map[string]any{"errors": []map[string]any{{"code": "UNKNOWN", "message": "mismatch Content-Length"}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ep := registryAnswering(t, ocitransport.Options{}, "/v2/amp/x/blobs/", false, jsonError(http.StatusInternalServerError, body))
	a, err := ep.Resolve(ctx, "v1")
	if err != nil {
		t.Fatal(err)
	}
	err = ep.WriteBundle(ctx, a, &countWriter{})
	if nameOf(err) != string(ocitransport.ErrRegistry) {
		t.Fatalf("a 500 whose message ends in oras-go's size text: %v, want %s", err, ocitransport.ErrRegistry)
	}
}

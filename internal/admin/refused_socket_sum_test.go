//go:build unix

package admin

import (
	"bytes"
	"context"
	"crypto/sha256"
	"testing"

	"github.com/ampbundle/ampbundle/resolver"
)

// TestSocketImportUnderAnotherFilesSumDoesNotRecordIt: the import route
// takes file_sha256 from its query, and the store keyed its record of
// recent refusals by it without checking it against the body; GET
// /v1/refused then answered for that SHA-256. A caller of the socket (or
// a body altered on its way) had any file recorded as refused, and a sync
// through this agent skipped the genuine file for up to a day. The record
// now names only the bytes the store read (MIRROR-13).
func TestSocketImportUnderAnotherFilesSumDoesNotRecordIt(t *testing.T) {
	_, _, c := serve(t)
	if err := c.TrustAdd("example", publisher(t), []string{"org.example"}); err != nil {
		t.Fatal(err)
	}
	genuine := sample(t, "translate.ampb")
	sum := sha256.Sum256(genuine)
	altered := bytes.Clone(genuine)
	altered[len(altered)-2] ^= 0x01 // inside the last artifact
	if _, err := c.Import(context.Background(), bytes.NewReader(altered), resolver.ImportOptions{FileSHA256: sum[:]}); err == nil {
		t.Fatal("an altered copy was imported")
	}
	if v, ok, err := c.RefusedAt(sum[:]); err != nil || ok {
		t.Fatalf("GET /v1/refused for the genuine file after an altered copy was refused under its SHA-256: %q %v %v; want not refused", v, ok, err)
	}
}

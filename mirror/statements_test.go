package mirror

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/resolver"
)

// signedRevocation revokes the given keys and bundle versions for
// org.example, signed by signers.
func signedRevocation(t testing.TB, keys []string, versions []bundle.BundleVersion, signers ...ed25519.PrivateKey) []byte {
	t.Helper()
	r := &bundle.Revocation{Format: bundle.RevocationFormat, Scope: "org.example", CreatedAt: "2026-11-20T11:00:00Z", Keys: keys, Bundles: versions}
	r.Normalize()
	data, err := bundle.SignRevocation(r, signers)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// strangerRevocation revokes a key nobody trusts (it changes no bundle).
func strangerRevocation(t testing.TB, n byte) []byte {
	stranger := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{n}, ed25519.SeedSize))
	return signedRevocation(t, []string{amp.DIDKey(stranger.Public().(ed25519.PublicKey))}, nil, testKey)
}

// applyStatements applies statements to the store at p, in order.
func applyStatements(t testing.TB, p string, sts ...[]byte) {
	t.Helper()
	s, err := resolver.Open(p, resolver.Options{Now: func() time.Time { return testNow }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, st := range sts {
		if _, err := s.ApplyRevocation(st); err != nil {
			t.Fatal(err)
		}
	}
}

// TestStatementsServedByteIdenticalAtTheirHash: the mirror serves every
// statement its store applied, byte for byte, at /statements/{sha256},
// ETag the hash, 304 on a match, HEAD without a body, listed in the index
// in application order; an unknown or malformed hash is not_found.
func TestStatementsServedByteIdenticalAtTheirHash(t *testing.T) {
	p := newStore(t, testBundle(t, 1))
	r1, r2 := strangerRevocation(t, 1), strangerRevocation(t, 2)
	applyStatements(t, p, r1, r2)
	_, ts := startMirror(t, p, nil)
	c := ts.Client()
	resp, err := c.Get(ts.URL + IndexPath)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	ix, err := DecodeIndex(raw)
	if err != nil {
		t.Fatal(err)
	}
	if len(ix.Statements) != 2 {
		t.Fatalf("index lists %d statements, want 2", len(ix.Statements))
	}
	for i, want := range [][]byte{r1, r2} {
		sum := sha256.Sum256(want)
		e := ix.Statements[i]
		if e.SHA256 != hex.EncodeToString(sum[:]) || e.Size != int64(len(want)) || e.ContentType != bundle.MediaTypeRevocation {
			t.Fatalf("index entry %d: %+v", i, e)
		}
		resp, err := c.Get(ts.URL + e.Href)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		etag := `"sha-256:` + e.SHA256 + `"`
		if resp.StatusCode != 200 || !bytes.Equal(got, want) || resp.Header.Get("ETag") != etag || resp.Header.Get("Content-Type") != bundle.MediaTypeRevocation {
			t.Fatalf("statement %d: status %d, equal %v, etag %s", i, resp.StatusCode, bytes.Equal(got, want), resp.Header.Get("ETag"))
		}
		req, _ := http.NewRequest(http.MethodGet, ts.URL+e.Href, nil)
		req.Header.Set("If-None-Match", etag)
		if resp, err := c.Do(req); err != nil || resp.StatusCode != http.StatusNotModified {
			t.Fatalf("conditional GET: %v %v", resp, err)
		}
		if resp, err := c.Head(ts.URL + e.Href); err != nil || resp.StatusCode != 200 || resp.ContentLength != int64(len(want)) {
			t.Fatalf("HEAD: %v %v", resp, err)
		}
	}
	for _, bad := range []string{
		StatementsPrefix + hex.EncodeToString(make([]byte, 32)),            // well formed, not served
		StatementsPrefix + "ABCDEF" + hex.EncodeToString(make([]byte, 29)), // upper case
		StatementsPrefix + ix.Statements[0].SHA256 + "/",                   // trailing slash
		StatementsPrefix + ix.Statements[0].SHA256[:63],                    // short
		StatementsPrefix + "../index.json",                                 // traversal
	} {
		resp, err := c.Get(ts.URL + bad)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("%s: status %d, want 404", bad, resp.StatusCode)
		}
	}
}

// TestHostileIndexStatementsRefused: an index whose statement entries
// break docs/FORMAT.md §11.1 (bad hash, repeated, unknown type, oversize,
// another href) is refused before anything is downloaded; an index of an
// older mirror, without "statements", is accepted as listing none.
func TestHostileIndexStatementsRefused(t *testing.T) {
	h := hex.EncodeToString(make([]byte, 32))
	ok := `{"content_type":"application/ampbundle-revocation+cbor","size":10,"sha256":"` + h + `","href":"/statements/` + h + `"}`
	for name, st := range map[string]string{
		"bad hash":     `{"content_type":"application/ampbundle-revocation+cbor","size":10,"sha256":"zz","href":"/statements/zz"}`,
		"repeated":     ok + "," + ok,
		"unknown type": `{"content_type":"application/ampbundle","size":10,"sha256":"` + h + `","href":"/statements/` + h + `"}`,
		"oversize":     `{"content_type":"application/ampbundle-revocation+cbor","size":99999999,"sha256":"` + h + `","href":"/statements/` + h + `"}`,
		"other href":   `{"content_type":"application/ampbundle-revocation+cbor","size":10,"sha256":"` + h + `","href":"/bundles/x"}`,
	} {
		if _, err := DecodeIndex([]byte(`{"format":"ampbundle-mirror-index/1","generation":1,"bundles":[],"capabilities":[],"statements":[` + st + `]}`)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	ix, err := DecodeIndex([]byte(`{"format":"ampbundle-mirror-index/1","generation":1,"bundles":[],"capabilities":[],"statements":[` + ok + `]}`))
	if err != nil || len(ix.Statements) != 1 {
		t.Fatalf("a valid statement entry: %v", err)
	}
	ix, err = DecodeIndex([]byte(`{"format":"ampbundle-mirror-index/1","generation":1,"bundles":[],"capabilities":[]}`))
	if err != nil || len(ix.Statements) != 0 {
		t.Fatalf("an older index: %v", err)
	}
}

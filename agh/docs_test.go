package agh

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
)

// aghSection returns the "AGH projection" section of docs/FORMAT.md.
func aghSection(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "docs", "FORMAT.md"))
	if err != nil {
		t.Fatal(err)
	}
	i := strings.Index(string(raw), "\n## AGH projection")
	if i < 0 {
		t.Fatal("no AGH projection section")
	}
	sec := string(raw[i:])
	if j := strings.Index(sec[1:], "\n## "); j > 0 {
		sec = sec[:j]
	}
	return sec
}

// The annotated transfer envelope of docs/FORMAT.md is
// testdata/agh/transfer-envelope.json, is what TransferEnvelope produces
// from the inputs the text gives, and verifies; the refusals and the ts
// window the annotations name are the receiver's.
func TestDocsAGHTransferEnvelopeExampleVerifies(t *testing.T) {
	sec := aghSection(t)
	i := strings.Index(sec, "**Transfer envelope.**")
	if i < 0 {
		t.Fatal("no transfer envelope paragraph")
	}
	block := sec[i:]
	j := strings.Index(block, "```json\n")
	k := strings.Index(block[j+8:], "```")
	if j < 0 || k < 0 {
		t.Fatal("no json example")
	}
	doc := []byte(block[j+8 : j+8+k])
	gen, err := TransferEnvelope(pageCatalog()[0], &Signer{Key: testKey(1)}, "",
		EnvelopeOptions{Now: clock, Rand: bytes.NewReader(bytes.Repeat([]byte{7}, 16))})
	if err != nil {
		t.Fatal(err)
	}
	if a, b, c := canon(t, doc), canon(t, read(t, "transfer-envelope.json")), canon(t, gen); a != b || b != c {
		t.Fatalf("docs, testdata and TransferEnvelope differ:\n%s\n%s\n%s", a, b, c)
	}
	tr, err := ReceiveTransfer(doc, ReceiveOptions{Now: clock})
	if err != nil || !tr.Verified {
		t.Fatalf("the documented envelope does not verify: %v", err)
	}
	notes := block[j+8+k:]
	for _, name := range []amp.ErrName{ErrUnsupportedProtocol, ErrUnsupportedKind, ErrStaleTimestamp, ErrFutureTimestamp,
		ErrExpired, ErrVerificationFailed, ErrUnsupportedProof, ErrInvalidProof, ErrSenderMismatch, ErrUnknownSender,
		ErrBadProof, ErrMissingProof, ErrInvalidEnvelope, ErrTooLarge, ErrInvalidDocument} {
		if !strings.Contains(notes, "`"+string(name)+"`") {
			t.Errorf("the annotations do not name %s", name)
		}
	}
	for _, w := range []string{fmt.Sprintf("now − %d s ≤ ts ≤ now + %d s", int(DefaultMaxAge.Seconds()), int(DefaultSkew.Seconds())),
		"`" + ProofContext + "`", "`" + ProofType + "`", "`" + DefaultChannel + "`", fmt.Sprintf("%d bytes", maxIDBytes)} {
		if !strings.Contains(notes, w) {
			t.Errorf("the annotations do not say %q", w)
		}
	}
}

// The failure table of docs/FORMAT.md ("AGH projection") is what the
// handler answers: each documented code is produced, with its status, by
// the request the table describes, and the body never echoes the request.
func TestDocsAGHFailureTableMatchesTheHandler(t *testing.T) {
	sec := aghSection(t)
	doc := map[string]int{}
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\| ([0-9]{3}) \\|").FindAllStringSubmatch(sec, -1) {
		doc[m[1]], _ = strconv.Atoi(m[2])
	}
	if len(doc) == 0 {
		t.Fatal("no failure table")
	}
	huge := Capability{ID: "big", Version: "1.0.0", Summary: strings.Repeat("x", 2048)}
	ok := func() ([]Capability, error) {
		return []Capability{{ID: "a", Version: "1.0.0", Summary: "A"}, huge}, nil
	}
	down := func() ([]Capability, error) { return nil, errors.New("store closed") }
	cases := []struct {
		code, method, target string
		catalog              func() ([]Capability, error)
	}{
		{"not_found", "GET", "/agh/v0/capabilities/%3Cscript%3E", ok},
		{"not_found", "GET", PeerCardPath + "?x=1", ok},
		{"method_not_allowed", "POST", PeerCardPath, ok},
		{"invalid_request", "GET", CatalogPath + "?evil=%3Cscript%3E", ok},
		{"too_large", "GET", CatalogPath, ok},
		{"unavailable", "GET", PeerCardPath, down},
	}
	seen := map[string]bool{}
	for _, tc := range cases {
		h := NewHandler(HandlerOptions{Catalog: tc.catalog, MaxBytes: 1024})
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(tc.method, tc.target, nil))
		var env struct {
			Error struct{ Code, Message string }
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &env); err != nil || env.Error.Code != tc.code {
			t.Errorf("%s %s: %d %s, want code %s", tc.method, tc.target, rec.Code, rec.Body, tc.code)
			continue
		}
		if want, documented := doc[tc.code]; !documented || rec.Code != want {
			t.Errorf("%s: status %d, docs say %d", tc.code, rec.Code, want)
		}
		if strings.Contains(rec.Body.String(), "script") || rec.Header().Get("Content-Type") != "application/json" {
			t.Errorf("%s: body %s echoes the request or is not JSON", tc.code, rec.Body)
		}
		seen[tc.code] = true
	}
	for code := range doc {
		// internal_error is not reachable from a request; overloaded
		// needs builds held (TestAnswersBuiltAtOnceAreBounded).
		if !seen[code] && code != "internal_error" && code != "overloaded" {
			t.Errorf("documented code %s is not exercised", code)
		}
	}
}

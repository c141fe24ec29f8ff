package a2acard

import (
	"bytes"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
)

// vectorBlock returns the fenced block between the markers
// <!-- a2a-vector-NAME:begin --> and :end of docs/FORMAT.md.
func vectorBlock(t *testing.T, doc, name string) []byte {
	t.Helper()
	_, rest, ok := strings.Cut(doc, "<!-- a2a-vector-"+name+":begin -->\n")
	block, _, ok2 := strings.Cut(rest, "<!-- a2a-vector-"+name+":end -->")
	if !ok || !ok2 {
		t.Fatalf("docs/FORMAT.md has no a2a-vector-%s block", name)
	}
	lines := strings.Split(strings.TrimSpace(block), "\n")
	if len(lines) < 3 || !strings.HasPrefix(lines[0], "```") || lines[len(lines)-1] != "```" {
		t.Fatalf("a2a-vector-%s is not one fenced block", name)
	}
	return []byte(strings.Join(lines[1:len(lines)-1], "\n"))
}

// TestFormatDocA2AVector: the test vector of docs/FORMAT.md ("A2A Agent
// Card") is what this package computes from the inputs the text gives,
// byte for byte, and the documented card verifies.
func TestFormatDocA2AVector(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "docs", "FORMAT.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	if !strings.Contains(doc, hex.EncodeToString(vectorPub())) {
		t.Fatal("the documented public key is not the vector key's")
	}
	key := vectorKey()
	kid := DIDKeyID(vectorPub())
	payload, err := Payload(vectorCard(t))
	if err != nil {
		t.Fatal(err)
	}
	header, err := ProtectedHeader(kid)
	if err != nil {
		t.Fatal(err)
	}
	card := signedVector(t)
	c := vectorCard(t)
	if _, err := Sign(c, key, kid); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		want []byte
	}{
		{"payload", payload},
		{"header", header},
		{"protected", []byte(c.Signatures[0].Protected)},
		{"signature", []byte(c.Signatures[0].Signature)},
		{"card", card},
	} {
		if got := vectorBlock(t, doc, tc.name); !bytes.Equal(got, tc.want) {
			t.Errorf("docs/FORMAT.md a2a-vector-%s:\n%s\ncomputed:\n%s", tc.name, got, tc.want)
		}
	}
	if _, err := Verify(vectorBlock(t, doc, "card"), vectorPub(), ""); err != nil {
		t.Fatalf("the documented card does not verify: %v", err)
	}
	for _, name := range []amp.ErrName{ErrTooLarge, ErrMalformed, ErrDuplicateMember, ErrNumberNotCanonical, ErrUnsigned,
		ErrSignatureMalformed, ErrHeaderUnsupported, ErrAlgUnsupported, ErrKidMismatch, ErrBadSignature, ErrInvalid} {
		if !strings.Contains(doc, "`"+string(name)+"`") {
			t.Errorf("docs/FORMAT.md does not name %s", name)
		}
	}
}

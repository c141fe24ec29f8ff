package resolver

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
)

const policyExample = "../testdata/trust-policy/example.json"

// TestTrustPolicyDocExample: the example of docs/FORMAT.md is the testdata
// file byte for byte, parses and applies (every key, the one threshold that
// changes, the key it does not list reported); applying it again changes
// nothing. With a bank threshold its keys cannot reach, it is refused as a
// whole, naming the scope, and changes nothing.
func TestTrustPolicyDocExample(t *testing.T) {
	want, err := os.ReadFile(policyExample)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile("../docs/FORMAT.md")
	if err != nil {
		t.Fatal(err)
	}
	const begin, end = "<!-- trust-policy-example:begin -->\n```json\n", "```\n<!-- trust-policy-example:end -->"
	a, b := bytes.Index(doc, []byte(begin)), bytes.Index(doc, []byte(end))
	if a < 0 || b < a || !bytes.Equal(doc[a+len(begin):b], want) {
		t.Fatalf("docs/FORMAT.md does not show %s as its trust policy example", policyExample)
	}
	p, err := ParseTrustPolicy(want)
	if err != nil {
		t.Fatal(err)
	}
	s := rotationStore(t) // trusts "a" (seed 41) for org.example
	if err := s.TrustSetThreshold("org.example.bank", 3); err != nil {
		t.Fatal(err)
	}
	res, err := s.ApplyTrustPolicy(p)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(res.Added, ",") != "officer-a,officer-b,bank-1" || res.Thresholds["org.example"] != 2 || len(res.Thresholds) != 1 ||
		strings.Join(res.NotInPolicy, ",") != "a" || res.Unchanged {
		t.Fatalf("result %+v", res)
	}
	if e := lastAudit(t, s); e.Action != "trust_threshold" || e.Threshold != 2 {
		t.Fatalf("audit %+v", e)
	}
	res, err = s.ApplyTrustPolicy(p)
	if err != nil || !res.Unchanged || len(res.Kept) != 3 {
		t.Fatalf("again: %+v %v", res, err)
	}
	th, _ := s.TrustThresholds()
	if th["org.example"] != 2 || th["org.example.bank"] != 3 || len(th) != 2 {
		t.Fatalf("thresholds %v", th)
	}
	// Four keys cover org.example.bank (a, officer-a, officer-b, bank-1).
	p.Thresholds["org.example.bank"] = 5
	before := dumpBesidesAudit(t, s)
	_, err = s.ApplyTrustPolicy(p)
	if !errors.Is(err, ErrInvalidPolicy) || !strings.Contains(err.Error(), "org.example.bank") {
		t.Fatalf("got %v, want invalid_policy naming org.example.bank", err)
	}
	if dumpBesidesAudit(t, s) != before {
		t.Fatal("a refused policy changed the store")
	}
}

// TestTrustPolicyMalformedOrConflicting: a policy a second reader could
// read differently, or one that would quietly replace a trusted key, is
// refused as a whole.
func TestTrustPolicyMalformedOrConflicting(t *testing.T) {
	good, err := os.ReadFile(policyExample)
	if err != nil {
		t.Fatal(err)
	}
	edit := func(from, to string) []byte { return bytes.Replace(good, []byte(from), []byte(to), 1) }
	tests := []struct {
		name string
		data []byte
		want amp.ErrName
	}{
		{"duplicate member", edit(`"format"`, `"format": "x", "format"`), ErrInvalidPolicy},
		{"unknown member", edit(`"format"`, `"comment": "x", "format"`), ErrInvalidPolicy},
		{"unknown key member", edit(`"name": "officer-a"`, `"name": "officer-a", "expires": 1`), ErrInvalidPolicy},
		{"other format", edit(`trust-policy/1`, `trust-policy/2`), ErrInvalidPolicy},
		{"same key twice", edit("z6Mko9hTggMwjSTEaJaPUfE6tqcy2xvU6BnNq3e3o8qVBiyH", "z6Mkon3Necd6NkkyfoGoHxid2znGc59LU3K7mubaRcFbLfLX"), ErrInvalidPolicy},
		{"same name twice", edit(`"officer-b"`, `"officer-a"`), ErrInvalidPolicy},
		{"not a did:key", edit("did:key:z6Mkon3", "did:web:z6Mkon3"), ErrInvalidPolicy},
		{"bad scope", edit(`["org.example.bank"]`, `["Org Example"]`), ErrInvalidPolicy},
		{"no scope", edit(`["org.example.bank"]`, `[]`), ErrInvalidPolicy},
		{"threshold 0", edit(`"org.example": 2`, `"org.example": 0`), ErrInvalidPolicy},
		{"threshold 9", edit(`"org.example": 2`, `"org.example": 9`), ErrInvalidPolicy},
		{"negative threshold", edit(`"org.example": 2`, `"org.example": -2`), ErrInvalidPolicy},
		{"same scope twice after cleaning", edit(`"org.example": 2`, `"org.example": 2, "org.example.": 2`), ErrInvalidPolicy},
		{"trailing data", append(bytes.Clone(good), []byte("{}")...), ErrInvalidPolicy},
		{"empty", []byte(`{"format": "ampbundle-trust-policy/1"}`), ErrInvalidPolicy},
		{"too large", append(bytes.Clone(good), bytes.Repeat([]byte(" "), MaxTrustPolicySize)...), bundle.ErrTooLarge},
	}
	for _, tt := range tests {
		if _, err := ParseTrustPolicy(tt.data); !errors.Is(err, tt.want) {
			t.Errorf("%s: got %v, want %s", tt.name, err, tt.want)
		}
	}
	// A name or key trusted otherwise is a conflict, not a replacement.
	for _, tt := range []struct {
		name  string
		setup func(s *Store) error
		want  amp.ErrName
	}{
		{"name in use for another key", func(s *Store) error { return s.TrustAdd("officer-a", pub(testKeyN(9)), []string{"org.example"}) }, ErrTrustExists},
		{"key trusted under another name", func(s *Store) error { return s.TrustAdd("old-a", pub(testKeyN(1)), []string{"org.example"}) }, ErrTrustExists},
		{"key trusted for other scopes", func(s *Store) error { return s.TrustAdd("officer-a", pub(testKeyN(1)), []string{"*"}) }, ErrTrustExists},
	} {
		s := rotationStore(t)
		if err := tt.setup(s); err != nil {
			t.Fatal(err)
		}
		p, err := ParseTrustPolicy(edit(`"org.example.bank": 3`, `"org.example.bank": 1`))
		if err != nil {
			t.Fatal(err)
		}
		before := dumpBesidesAudit(t, s)
		if _, err := s.ApplyTrustPolicy(p); !errors.Is(err, tt.want) {
			t.Errorf("%s: got %v, want %s", tt.name, err, tt.want)
		}
		if dumpBesidesAudit(t, s) != before {
			t.Errorf("%s: a refused policy changed the store", tt.name)
		}
	}
}

// FuzzParseTrustPolicy: no input panics the parser, every refusal is a
// named error, and an accepted policy is within its limits.
func FuzzParseTrustPolicy(f *testing.F) {
	data, err := os.ReadFile(filepath.Clean(policyExample))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Add([]byte(`{"format": "ampbundle-trust-policy/1", "thresholds": {"*": 2}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ParseTrustPolicy(data)
		if err != nil {
			var e *amp.Error
			if !errors.As(err, &e) || e.Name == "" {
				t.Fatalf("error without a name: %#v", err)
			}
			return
		}
		if len(p.Keys)+len(p.Thresholds) == 0 || len(p.Keys) > MaxTrustPolicyKeys {
			t.Fatalf("accepted %+v", p)
		}
	})
}

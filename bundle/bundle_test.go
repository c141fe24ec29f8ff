package bundle

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/capability"
)

var testNow = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

func testKey(seed byte) ed25519.PrivateKey {
	return ed25519.NewKeyFromSeed(bytes.Repeat([]byte{seed}, 32))
}

func trust(k ed25519.PrivateKey, scopes ...string) *Policy {
	return &Policy{Keys: []TrustedKey{{Name: "test", Key: k.Public().(ed25519.PublicKey), Scopes: scopes}}}
}

func mustVersion(t testing.TB, s string) capability.Version {
	v, err := capability.ParseVersion(s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

const didDoc = `{"id":"did:web:agents.example.org","verificationMethod":[{"id":"#k","type":"Multikey","controller":"did:web:agents.example.org","publicKeyMultibase":"z6MkmjY8GnV5i9YTDtPETC2uUAW6ejw3nk5mXF5yci5ab7th"}],"assertionMethod":["#k"]}`

// smallDraft is a minimal bundle: one capability, a shared schema, a DID
// document.
func smallDraft(t testing.TB) *Draft {
	in := `{"type":"object","required":["text"],"properties":{"text":{"$ref":"../../../schemas/text.json"}}}`
	out := `{"type":"object"}`
	return &Draft{
		BundleID: "org.example.demo", Version: 3, CreatedAt: testNow.Add(-time.Hour), Publisher: "did:web:agents.example.org",
		Artifacts: []Source{
			BytesSource("capabilities/org.example.demo.echo/1.0.0/input.schema.json", MediaTypeSchema, []byte(in)),
			BytesSource("capabilities/org.example.demo.echo/1.0.0/output.schema.json", MediaTypeSchema, []byte(out)),
			BytesSource("schemas/text.json", MediaTypeSchema, []byte(`{"type":"string","maxLength":64}`)),
			BytesSource("dids/agents.json", MediaTypeDID, []byte(didDoc)),
		},
		Capabilities: []capability.Descriptor{{
			Name: "org.example.demo.echo", Version: mustVersion(t, "1.0.0"),
			InputSchema:  capability.SchemaRef{ArtifactKey: "capabilities/org.example.demo.echo/1.0.0/input.schema.json"},
			OutputSchema: capability.SchemaRef{ArtifactKey: "capabilities/org.example.demo.echo/1.0.0/output.schema.json"},
		}},
		Aliases: map[string]string{"echo": "org.example.demo.echo"},
	}
}

func build(t testing.TB, d *Draft, keys ...ed25519.PrivateKey) []byte {
	t.Helper()
	var buf bytes.Buffer
	if _, err := Write(&buf, d, keys, WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// readAll reads a whole bundle, keeping the artifacts.
func readAll(data []byte, p *Policy, now time.Time) (*Reader, []*Artifact, error) {
	r, err := NewReader(bytes.NewReader(data), ReaderOptions{Policy: p, Now: func() time.Time { return now }})
	if err != nil {
		return nil, nil, err
	}
	var arts []*Artifact
	for {
		a, err := r.Next()
		if err == io.EOF {
			return r, arts, nil
		}
		if err != nil {
			return r, arts, err
		}
		arts = append(arts, a)
	}
}

func expectName(t *testing.T, err error, name amp.ErrName) {
	t.Helper()
	if !errors.Is(err, name) {
		t.Fatalf("got %v, want %s", err, name)
	}
}

func TestRoundTrip(t *testing.T) {
	k := testKey(1)
	data := build(t, smallDraft(t), k)
	r, arts, err := readAll(data, trust(k, "org.example"), testNow)
	if err != nil {
		t.Fatal(err)
	}
	m := r.Manifest()
	if m.BundleID != "org.example.demo" || m.Version != 3 || len(arts) != 4 || len(m.Capabilities) != 1 {
		t.Fatalf("manifest %+v, %d artifacts", m, len(arts))
	}
	// Artifacts arrive in key order with their bytes.
	if arts[0].Key != "capabilities/org.example.demo.echo/1.0.0/input.schema.json" || arts[3].Key != "schemas/text.json" {
		t.Fatalf("order: %s .. %s", arts[0].Key, arts[3].Key)
	}
	ref := m.Capabilities[0].InputSchema
	if ref.BundleID != "org.example.demo" || ref.HashAlg != "sha-256" || !ref.Matches(arts[0].Data) {
		t.Fatalf("schema ref not completed: %+v", ref)
	}
	if got := r.Signers(); len(got) != 1 || got[0].Name != "test" {
		t.Fatalf("signers %v", got)
	}
	// VerifyRest gives the same verdict without keeping bytes.
	r2, err := NewReader(bytes.NewReader(data), ReaderOptions{Policy: trust(k, "*"), Now: func() time.Time { return testNow }})
	if err != nil {
		t.Fatal(err)
	}
	if err := r2.VerifyRest(); err != nil {
		t.Fatal(err)
	}
	// sha-512 on request.
	d := smallDraft(t)
	d.HashAlg = capability.HashSHA512
	_, arts, err = readAll(build(t, d, k), trust(k, "*"), testNow)
	if err != nil || len(arts[0].Hash) != 64 {
		t.Fatalf("sha-512: %v", err)
	}
}

// TestReproducible: same source, key and created_at give identical bytes.
func TestReproducible(t *testing.T) {
	a := build(t, smallDraft(t), testKey(1))
	d := smallDraft(t)
	// Artifacts given in another order.
	d.Artifacts[0], d.Artifacts[3] = d.Artifacts[3], d.Artifacts[0]
	b := build(t, d, testKey(1))
	if !bytes.Equal(a, b) {
		t.Fatal("rebuilding gave different bytes")
	}
	d.CreatedAt = d.CreatedAt.Add(time.Second)
	if bytes.Equal(a, build(t, d, testKey(1))) {
		t.Fatal("a different created_at gave the same bytes")
	}
}

// TestTamperEveryByte flips each byte of a small bundle in turn: every
// flip is rejected (tampering).
func TestTamperEveryByte(t *testing.T) {
	k := testKey(1)
	data := build(t, smallDraft(t), k)
	p := trust(k, "org.example")
	for i := range data {
		for _, mask := range []byte{0x01, 0x80} {
			mut := bytes.Clone(data)
			mut[i] ^= mask
			_, _, err := readAll(mut, p, testNow)
			if err == nil {
				t.Fatalf("flipping byte %d (mask %#x) of %d went unnoticed", i, mask, len(data))
			}
			var e *amp.Error
			if !errors.As(err, &e) || e.Name == "" {
				t.Fatalf("byte %d: error without a name: %v", i, err)
			}
		}
	}
}

// TestTruncateEveryOffset: every strict prefix of a bundle is rejected
// (truncation).
func TestTruncateEveryOffset(t *testing.T) {
	k := testKey(1)
	data := build(t, smallDraft(t), k)
	p := trust(k, "org.example")
	for n := 0; n < len(data); n++ {
		_, _, err := readAll(data[:n], p, testNow)
		if err == nil {
			t.Fatalf("prefix of %d of %d bytes accepted", n, len(data))
		}
		if !errors.Is(err, ErrTruncated) && !errors.Is(err, ErrCountMismatch) {
			t.Fatalf("prefix of %d bytes: %v, want truncated or count_mismatch", n, err)
		}
	}
	if _, _, err := readAll(data, p, testNow); err != nil {
		t.Fatalf("the whole bundle: %v", err)
	}
}

func TestTrustDecisions(t *testing.T) {
	pub, other := testKey(1), testKey(2)
	data := build(t, smallDraft(t), pub)
	tests := []struct {
		name   string
		data   []byte
		policy *Policy
		now    time.Time
		want   amp.ErrName
	}{
		{"wrong key", data, trust(other, "*"), testNow, ErrUntrustedKey},
		{"no trusted keys", data, &Policy{}, testNow, ErrUntrustedKey},
		{"key trusted for another namespace", data, trust(pub, "com.acme"), testNow, ErrUntrustedNamespace},
		{"key trusted for a longer prefix only", data, trust(pub, "org.example.demo.echo"), testNow, ErrUntrustedNamespace},
		{"prefix at a label boundary only", data, trust(pub, "org.examp"), testNow, ErrUntrustedNamespace},
		{"trusted for the namespace", data, trust(pub, "org.example."), testNow, ""},
		{"trusted for everything", data, trust(pub, "*"), testNow, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := readAll(tt.data, tt.policy, tt.now)
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			expectName(t, err, tt.want)
		})
	}
}

func TestExpired(t *testing.T) {
	k := testKey(1)
	d := smallDraft(t)
	exp := testNow.Add(time.Hour)
	d.ExpiresAt = &exp
	data := build(t, d, k)
	if _, _, err := readAll(data, trust(k, "*"), testNow); err != nil {
		t.Fatalf("before expiry: %v", err)
	}
	_, _, err := readAll(data, trust(k, "*"), exp)
	expectName(t, err, ErrExpired)
}

// A DID document for a domain the signer is not trusted for is refused:
// otherwise a publisher trusted for org.example could speak for any did:web.
func TestDIDOutOfScope(t *testing.T) {
	k := testKey(1)
	d := smallDraft(t)
	d.Artifacts[3] = BytesSource("dids/agents.json", MediaTypeDID, bytes.ReplaceAll([]byte(didDoc), []byte("agents.example.org"), []byte("agents.evil.com")))
	data := build(t, d, k)
	_, _, err := readAll(data, trust(k, "org.example"), testNow)
	expectName(t, err, ErrUntrustedNamespace)
	// VerifyRest catches it too.
	r, err := NewReader(bytes.NewReader(data), ReaderOptions{Policy: trust(k, "org.example"), Now: func() time.Time { return testNow }})
	if err != nil {
		t.Fatal(err)
	}
	expectName(t, r.VerifyRest(), ErrUntrustedNamespace)
	// In scope with "com.evil" too.
	if _, _, err := readAll(data, trust(k, "org.example", "com.evil"), testNow); err != nil {
		t.Fatal(err)
	}
}

func TestMultipleSignatures(t *testing.T) {
	a, b, c := testKey(1), testKey(2), testKey(3)
	data := build(t, smallDraft(t), a, b)
	// Either signer alone is enough; an unknown signature is ignored.
	for _, k := range []ed25519.PrivateKey{a, b} {
		if _, _, err := readAll(data, trust(k, "*"), testNow); err != nil {
			t.Fatal(err)
		}
	}
	_, _, err := readAll(data, trust(c, "*"), testNow)
	expectName(t, err, ErrUntrustedKey)
	// Signatures are sorted by kid whatever order the keys were given in.
	in, err := Inspect(bytes.NewReader(data), 0)
	if err != nil || len(in.Signatures) != 2 || in.Signatures[0].KID >= in.Signatures[1].KID {
		t.Fatalf("inspect: %v %v", in, err)
	}
	if !bytes.Equal(build(t, smallDraft(t), b, a), data) {
		t.Fatal("the order of the signing keys changes the file")
	}
}

func TestStructuralFaults(t *testing.T) {
	k := testKey(1)
	p := trust(k, "*")
	data := build(t, smallDraft(t), k)
	in, err := Inspect(bytes.NewReader(data), 0)
	if err != nil {
		t.Fatal(err)
	}
	first := len(in.SignedManifest)
	tests := []struct {
		name string
		data []byte
		want amp.ErrName
	}{
		{"trailing data", append(bytes.Clone(data), 0x00), ErrTrailingData},
		{"an extra artifact", append(bytes.Clone(data), 0x41, 0x00), ErrCountMismatch},
		{"empty file", nil, ErrTruncated},
		{"not cbor", []byte("hello world"), ErrUnknownFormat},
		{"a COSE_Sign1 instead", append([]byte{0xd2}, data[2:]...), ErrUnknownFormat},
		{"manifest only", data[:first], ErrCountMismatch},
		// Replace the first artifact's 1-byte-length head (0x58 n) with a
		// head announcing one byte more.
		{"size mismatch", func() []byte {
			m := bytes.Clone(data)
			m[first+1]++
			return m
		}(), ErrSizeMismatch},
		{"hash mismatch", func() []byte {
			m := bytes.Clone(data)
			m[first+5] ^= 0x20
			return m
		}(), ErrHashMismatch},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := readAll(tt.data, p, testNow)
			expectName(t, err, tt.want)
		})
	}
}

func TestBadSignatureByTrustedKey(t *testing.T) {
	k := testKey(1)
	data := build(t, smallDraft(t), k)
	in, _ := Inspect(bytes.NewReader(data), 0)
	sig := in.Signatures[0].Sig
	i := bytes.Index(data, sig)
	mut := bytes.Clone(data)
	mut[i] ^= 1
	_, _, err := readAll(mut, trust(k, "*"), testNow)
	expectName(t, err, ErrBadSignature)
}

func TestManifestRules(t *testing.T) {
	k := testKey(1)
	tests := []struct {
		name string
		mod  func(*Draft)
		want amp.ErrName
	}{
		{"unsafe key: parent", func(d *Draft) { d.Artifacts[0].Key = "../x.json" }, ErrUnsafeKey},
		{"unsafe key: absolute", func(d *Draft) { d.Artifacts[0].Key = "/etc/passwd" }, ErrUnsafeKey},
		{"unsafe key: backslash", func(d *Draft) { d.Artifacts[0].Key = `a\b.json` }, ErrUnsafeKey},
		{"unsafe key: hidden", func(d *Draft) { d.Artifacts[0].Key = "a/.hidden" }, ErrUnsafeKey},
		{"unsafe key: empty segment", func(d *Draft) { d.Artifacts[0].Key = "a//b" }, ErrUnsafeKey},
		{"unsafe key: too long", func(d *Draft) { d.Artifacts[0].Key = string(bytes.Repeat([]byte("a"), 256)) }, ErrUnsafeKey},
		{"duplicate key", func(d *Draft) { d.Artifacts = append(d.Artifacts, d.Artifacts[2]) }, ErrDuplicateKey},
		{"keys equal but for case", func(d *Draft) {
			d.Artifacts = append(d.Artifacts, BytesSource("SCHEMAS/text.json", MediaTypeSchema, []byte("{}")))
		}, ErrDuplicateKey},
		{"bad bundle id", func(d *Draft) { d.BundleID = "demo" }, ErrInconsistent},
		{"version 0", func(d *Draft) { d.Version = 0 }, ErrInconsistent},
		{"publisher not a did", func(d *Draft) { d.Publisher = "acme" }, ErrInconsistent},
		{"alias to a missing capability", func(d *Draft) { d.Aliases = map[string]string{"x": "org.example.other"} }, ErrInconsistent},
		{"schema ref to a missing artifact", func(d *Draft) { d.Capabilities[0].OutputSchema.ArtifactKey = "nope.json" }, ErrInconsistent},
		{"two descriptors with one id", func(d *Draft) { d.Capabilities = append(d.Capabilities, d.Capabilities[0]) }, ErrInconsistent},
		{"expires before created", func(d *Draft) { e := d.CreatedAt.Add(-time.Second); d.ExpiresAt = &e }, ErrInconsistent},
		{"media type", func(d *Draft) { d.Artifacts[0].MediaType = "json" }, ErrInconsistent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := smallDraft(t)
			tt.mod(d)
			_, err := Write(io.Discard, d, []ed25519.PrivateKey{k}, WriteOptions{})
			expectName(t, err, tt.want)
		})
	}
}

// A manifest that is signed but breaks a rule is refused by the reader
// too: the reader never relies on the writer.
func TestReaderChecksManifestRules(t *testing.T) {
	k := testKey(1)
	m := &Manifest{Format: Format, BundleID: "org.example.demo", Version: 1, CreatedAt: testNow, Publisher: "did:web:example.org",
		Artifacts: []ArtifactEntry{{Key: "b", MediaType: MediaTypeSchema, Size: 1, HashAlg: "sha-256", Hash: make([]byte, 32)},
			{Key: "a", MediaType: MediaTypeSchema, Size: 1, HashAlg: "sha-256", Hash: make([]byte, 32)}}}
	// Encode refuses unsorted artifacts, so encode by hand.
	w := wireManifest{Format: m.Format, BundleID: m.BundleID, Version: 1, CreatedAt: testNow.Format(timeLayout), Publisher: m.Publisher, Artifacts: m.Artifacts, Capabilities: []capability.Descriptor{}}
	payload, err := amp.Marshal(w)
	if err != nil {
		t.Fatal(err)
	}
	signed, err := signManifest(payload, k)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = readAll(signed, trust(k, "*"), testNow)
	expectName(t, err, ErrInconsistent)
	// An unknown manifest field is refused even when signed.
	var fields map[string]any
	amp.Unmarshal(payload, &fields)
	w.Artifacts = w.Artifacts[1:]
	payload, _ = amp.Marshal(w)
	var raw map[string]any
	amp.Unmarshal(payload, &raw)
	raw["not_before"] = "2026-01-01T00:00:00Z"
	payload, _ = amp.Marshal(raw)
	signed, _ = signManifest(payload, k)
	_, _, err = readAll(signed, trust(k, "*"), testNow)
	expectName(t, err, ErrMalformed)
}

func TestDIDScopeName(t *testing.T) {
	for did, want := range map[string]string{
		"did:web:example.org":                   "org.example",
		"did:web:agents.example.org:team:x":     "org.example.agents",
		"did:web:Agents.Example.org#k":          "org.example.agents",
		"did:web:example.com%3A8443":            "com.example",
		"did:web:localhost":                     "",
		"did:key:z6MkmjY8GnV5i9YTDtPETC2uUAW6e": "",
	} {
		got, ok := DIDScopeName(did)
		if got != want || ok != (want != "") {
			t.Errorf("%s: got %q %v, want %q", did, got, ok, want)
		}
	}
}

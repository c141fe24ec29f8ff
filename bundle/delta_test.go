package bundle

import (
	"bufio"
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
)

// deltaPair returns a base bundle (smallDraft, version 3) and a delta to
// version 4 in which one schema changed.
func deltaPair(t testing.TB, k ed25519.PrivateKey) (base, delta, full []byte, hdr *Delta) {
	t.Helper()
	base = build(t, smallDraft(t), k)
	next := func() *Draft {
		d := smallDraft(t)
		d.Version = 4
		d.Artifacts[2] = BytesSource("schemas/text.json", MediaTypeSchema, []byte(`{"type":"string","maxLength":128}`))
		return d
	}
	full = build(t, next(), k)
	in, err := Inspect(bytes.NewReader(base), 0)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, hdr, err = WriteDelta(&buf, next(), []ed25519.PrivateKey{k}, in.SignedManifest, WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	return base, buf.Bytes(), full, hdr
}

func readDelta(data []byte, p *Policy) (*Reader, []*Artifact, error) {
	r, err := NewReader(bytes.NewReader(data), ReaderOptions{Policy: p, Now: func() time.Time { return testNow }, AllowDelta: true})
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

// items splits a file into its top-level CBOR items.
func items(t testing.TB, data []byte) [][]byte {
	t.Helper()
	var out [][]byte
	for len(data) > 0 {
		item, err := readItem(bufio.NewReader(bytes.NewReader(data)), int64(len(data)))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, data[:len(item)])
		data = data[len(item):]
	}
	return out
}

func signedDelta(t testing.TB, d *Delta, keys ...ed25519.PrivateKey) []byte {
	t.Helper()
	w := *d
	payload, err := amp.Marshal(w)
	if err != nil {
		t.Fatal(err)
	}
	out, err := signCOSE(MediaTypeDelta, payload, keys)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestDeltaLayout: a delta is the signed header, the full bundle's signed
// manifest byte for byte, then only the changed artifact; a reader that
// does not ask for deltas refuses it by name.
func TestDeltaLayout(t *testing.T) {
	k := testKey(1)
	base, delta, full, hdr := deltaPair(t, k)
	di, fi := items(t, delta), items(t, full)
	if len(di) != 3 || !bytes.Equal(di[1], fi[0]) {
		t.Fatalf("delta has %d items; item 1 equal to the full signed manifest: %v", len(di), len(di) > 1 && bytes.Equal(di[1], fi[0]))
	}
	if len(hdr.Omitted) != 3 || hdr.Base.Version != 3 || hdr.Version != 4 {
		t.Fatalf("header %+v", hdr)
	}
	if _, _, err := readAll(delta, trust(k, "org.example"), testNow); err == nil {
		t.Fatal("a reader without AllowDelta accepted a delta")
	} else {
		expectName(t, err, ErrDeltaBundle)
	}
	r, arts, err := readDelta(delta, trust(k, "org.example"))
	if err != nil {
		t.Fatal(err)
	}
	fromBase := 0
	for _, a := range arts {
		if a.FromBase {
			fromBase++
		} else if a.Key != "schemas/text.json" || a.Data == nil {
			t.Fatalf("carried artifact %s", a.Key)
		}
	}
	if len(arts) != 4 || fromBase != 3 {
		t.Fatalf("%d artifacts, %d from the base", len(arts), fromBase)
	}
	bi, _ := Inspect(bytes.NewReader(base), 0)
	if err := r.CheckBase(bi.SignedManifest); err != nil {
		t.Fatal(err)
	}
	fullIn, _ := Inspect(bytes.NewReader(full), 0)
	expectName(t, r.CheckBase(fullIn.SignedManifest), ErrDeltaBaseMissing)
}

// TestDeltaRepointedAtAnotherBundleID: the base reference is signed; a
// delta whose header was edited to point at another bundle_id fails its
// signature, and one re-signed by a trusted key still names a base of
// another bundle_id and is refused.
func TestDeltaRepointedAtAnotherBundleID(t *testing.T) {
	k := testKey(1)
	_, delta, _, hdr := deltaPair(t, k)
	it := items(t, delta)
	// Edit the header bytes in place: same length, another bundle_id.
	edited := bytes.Replace(it[0], []byte("org.example.demo"), []byte("org.example.demx"), 1)
	_, _, err := readDelta(bytes.Join([][]byte{edited, it[1], it[2]}, nil), trust(k, "org.example"))
	expectName(t, err, ErrBadSignature)
	// Re-signed by the trusted key itself.
	h := *hdr
	h.Base.BundleID = "org.example.other"
	_, _, err = readDelta(bytes.Join([][]byte{signedDelta(t, &h, k), it[1], it[2]}, nil), trust(k, "org.example"))
	expectName(t, err, ErrDeltaMismatch)
}

// TestDeltaCarriesAnotherManifest: a validly signed delta header followed
// by the signed manifest of another bundle (or of another build) is
// refused: the header binds the manifest's hash.
func TestDeltaCarriesAnotherManifest(t *testing.T) {
	k := testKey(1)
	_, delta, _, _ := deltaPair(t, k)
	it := items(t, delta)
	other := smallDraft(t)
	other.Version = 4
	other.CreatedAt = other.CreatedAt.Add(time.Second)
	oi := items(t, build(t, other, k))
	_, _, err := readDelta(bytes.Join([][]byte{it[0], oi[0], it[2]}, nil), trust(k, "org.example"))
	expectName(t, err, ErrDeltaMismatch)
}

// TestDeltaHeaderSignedByAnotherKey: a header no manifest signer signed is
// refused even when its signer is trusted.
func TestDeltaHeaderSignedByAnotherKey(t *testing.T) {
	k, other := testKey(1), testKey(2)
	_, delta, _, hdr := deltaPair(t, k)
	it := items(t, delta)
	p := &Policy{Keys: []TrustedKey{trust(k, "org.example").Keys[0], {Name: "other", Key: other.Public().(ed25519.PublicKey), Scopes: []string{"org.example"}}}}
	_, _, err := readDelta(bytes.Join([][]byte{signedDelta(t, hdr, other), it[1], it[2]}, nil), p)
	expectName(t, err, ErrDeltaMismatch)
}

// TestDeltaTruncateEveryOffset: every proper prefix of a delta fails.
func TestDeltaTruncateEveryOffset(t *testing.T) {
	k := testKey(1)
	_, delta, _, _ := deltaPair(t, k)
	for n := 0; n < len(delta); n++ {
		if _, _, err := readDelta(delta[:n], trust(k, "org.example")); err == nil {
			t.Fatalf("a delta cut at %d of %d bytes verified", n, len(delta))
		}
	}
}

// TestDeltaHeaderRules: the header's own rules.
func TestDeltaHeaderRules(t *testing.T) {
	sum := sha256.Sum256(nil)
	good := func() *Delta {
		return &Delta{Format: DeltaFormat, BundleID: "org.example.a", Version: 2, ManifestSHA256: sum[:],
			Base: BaseRef{BundleID: "org.example.a", Version: 1, ManifestSHA256: sum[:]}, Omitted: []string{"a.json", "b.json"}}
	}
	if _, err := good().Encode(); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		edit func(d *Delta)
		want amp.ErrName
	}{
		{"another format", func(d *Delta) { d.Format = "ampbundle-delta/2" }, (ErrUnknownFormat)},
		{"base of another bundle_id", func(d *Delta) { d.Base.BundleID = "org.example.b" }, (ErrDeltaMismatch)},
		{"base not older", func(d *Delta) { d.Base.Version = 2 }, (ErrDeltaMismatch)},
		{"short manifest hash", func(d *Delta) { d.ManifestSHA256 = sum[:31] }, (ErrInconsistent)},
		{"unsorted omitted keys", func(d *Delta) { d.Omitted = []string{"b.json", "a.json"} }, (ErrInconsistent)},
		{"unsafe omitted key", func(d *Delta) { d.Omitted = []string{"../a.json"} }, (ErrUnsafeKey)},
	}
	for _, c := range cases {
		d := good()
		c.edit(d)
		if _, err := d.Encode(); !errors.Is(err, c.want) {
			t.Errorf("%s: got %v, want %s", c.name, err, c.want)
		}
	}
}

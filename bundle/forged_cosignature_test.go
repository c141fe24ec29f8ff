package bundle

import (
	"bytes"
	"crypto/ed25519"
	"io"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
)

// withForgedSignatureOn returns item, a COSE_Sign of content type ctype,
// with one more COSE_Signature under kid (in the one allowed form of its
// protected header) whose bytes no key made. The signature list is covered
// by no signature, so anyone on the path can do this.
func withForgedSignatureOn(t *testing.T, item []byte, ctype string, kid []byte) []byte {
	t.Helper()
	obj, err := decodeCOSE(item, ctype)
	if err != nil {
		t.Fatal(err)
	}
	obj.signatures = append(obj.signatures, Signature{KID: string(kid), Protected: signProtectedHeader(kid), Sig: bytes.Repeat([]byte{0x5a}, ed25519.SignatureSize)})
	out, err := obj.encode()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// withForgedSignature returns the bundle data with a forged signature
// under the did:key of key added to its signed manifest (item 0).
func withForgedSignature(t *testing.T, data []byte, key ed25519.PrivateKey) []byte {
	t.Helper()
	in, err := Inspect(bytes.NewReader(data), 0)
	if err != nil {
		t.Fatal(err)
	}
	item := withForgedSignatureOn(t, in.SignedManifest, MediaTypeManifest, KeyID(pub(key)))
	return append(item, data[len(in.SignedManifest):]...)
}

// TestForgedCosignatureUnderAnUnknownKidIsRefused
//
// Attack: a mirror (or anyone on the path) takes a genuine bundle signed
// by the publisher and adds a COSE_Signature whose kid is the did:key of
// a key that other sites trust (a co-signing officer, another publisher)
// and whose bytes are garbage. A store that ignored signatures by keys it
// does not trust would install that copy, keep it and relay it (export,
// mirror, OCI); every site that trusts the officer refuses it
// (bad_signature), and the genuine file is then refused at the first store
// as a rollback (same version, other bytes).
//
// Defence (FORMAT.md §2, "Which signatures count"): every signature must
// verify against the key its kid names, trusted or not, as a statement's
// (§21): the copy is refused bad_signature whoever the store trusts.
func TestForgedCosignatureUnderAnUnknownKidIsRefused(t *testing.T) {
	publisher, officer := testKey(1), testKey(2)
	genuine := build(t, smallDraft(t), publisher)
	p := trust(publisher, "org.example") // this site does not know the officer
	if _, _, err := readAll(genuine, p, testNow); err != nil {
		t.Fatalf("genuine bundle: %v", err)
	}
	forged := withForgedSignature(t, genuine, officer)
	_, _, err := readAll(forged, p, testNow)
	if err == nil {
		t.Fatal("a copy carrying a forged signature under the officer's kid was accepted; a site that keeps and relays it hands every site trusting the officer a file they refuse")
	}
	expectName(t, err, ErrBadSignature)
	// Where the officer is trusted the copy is refused too: both sites
	// decide alike.
	both := &Policy{Keys: []TrustedKey{
		{Name: "publisher", Key: pub(publisher), Scopes: []string{"org.example"}},
		{Name: "officer", Key: pub(officer), Scopes: []string{"org.example"}},
	}}
	_, _, err = readAll(forged, both, testNow)
	expectName(t, err, ErrBadSignature)
	// A store with no trust at all refuses it as forged, not as untrusted.
	_, _, err = readAll(forged, &Policy{}, testNow)
	expectName(t, err, ErrBadSignature)
}

// TestForgedSignatureRefusedOnEveryBundlePath: the copy with a forged
// signature added is refused on every path that reads a bundle's
// signatures, whatever kid it carries: a did:key the reader does not
// trust (bad_signature), or a kid that names no Ed25519 key without the
// network (an X25519 did:key, a did:web, a did:key with a fragment,
// bytes that are no DID at all): unknown_format, as for a statement
// (FORMAT.md §21, VerifyAll). The error never echoes a kid that is not a
// canonical Ed25519 did:key.
func TestForgedSignatureRefusedOnEveryBundlePath(t *testing.T) {
	publisher, officer := testKey(1), testKey(2)
	p := trust(publisher, "org.example")
	genuine := build(t, smallDraft(t), publisher)
	_, delta, _, _ := deltaPair(t, publisher)
	index, _, _ := splitBytes(t, genuine, "s.ampb", 200, publisher)
	kids := []struct {
		name string
		kid  []byte
		want amp.ErrName
	}{
		{"an untrusted did:key", KeyID(pub(officer)), ErrBadSignature},
		{"a trusted did:key", KeyID(pub(publisher)), ErrDuplicateSigner},
		{"an x25519 did:key", []byte("did:key:z6LSbysY2xFMRpGMhb7tFTLMpeuPRaqaWM1yECx2AtzE3KCc"), ErrUnknownFormat},
		{"a did:web", []byte("did:web:evil.example"), ErrUnknownFormat},
		{"a did:key with a fragment", append(KeyID(pub(officer)), "#x"...), ErrUnknownFormat},
		{"terminal escapes", []byte("\x1b[31mroot\x1b[0m"), ErrUnknownFormat},
	}
	paths := []struct {
		name string
		read func(t *testing.T, kid []byte) error
	}{
		{"bundle", func(t *testing.T, kid []byte) error {
			it := items(t, genuine)
			forged := append(withForgedSignatureOn(t, it[0], MediaTypeManifest, kid), genuine[len(it[0]):]...)
			_, _, err := readAll(forged, p, testNow)
			return err
		}},
		{"delta header", func(t *testing.T, kid []byte) error {
			it := items(t, delta)
			forged := append(withForgedSignatureOn(t, it[0], MediaTypeDelta, kid), delta[len(it[0]):]...)
			_, _, err := readDelta(forged, p)
			return err
		}},
		{"delta's full manifest", func(t *testing.T, kid []byte) error {
			it := items(t, delta)
			forged := append(bytes.Clone(it[0]), withForgedSignatureOn(t, it[1], MediaTypeManifest, kid)...)
			for _, x := range it[2:] {
				forged = append(forged, x...)
			}
			_, _, err := readDelta(forged, p)
			return err
		}},
		{"part index", func(t *testing.T, kid []byte) error {
			_, _, err := ReadPartIndex(bytes.NewReader(withForgedSignatureOn(t, index, MediaTypePartIndex, kid)), p)
			return err
		}},
		{"cosign", func(t *testing.T, kid []byte) error {
			it := items(t, genuine)
			forged := append(withForgedSignatureOn(t, it[0], MediaTypeManifest, kid), genuine[len(it[0]):]...)
			_, err := Cosign(io.Discard, bytes.NewReader(forged), testKey(3), CosignOptions{Now: func() time.Time { return testNow }})
			return err
		}},
	}
	for _, path := range paths {
		for _, k := range kids {
			t.Run(path.name+"/"+k.name, func(t *testing.T) {
				err := path.read(t, k.kid)
				expectName(t, err, k.want)
				if k.want == ErrUnknownFormat && bytes.Contains([]byte(err.Error()), k.kid) {
					t.Fatalf("the error echoes the kid: %v", err)
				}
			})
		}
	}
}

// TestGenuineCosignatureByAnUntrustedKeyStillReads: a genuine signature by
// a key the reader does not trust verifies and is not counted; the bundle
// reads with the trusted signer alone, whether it was built with both keys
// or co-signed later (ampbundle sign).
func TestGenuineCosignatureByAnUntrustedKeyStillReads(t *testing.T) {
	publisher, officer := testKey(1), testKey(2)
	p := trust(publisher, "org.example")
	var cosigned bytes.Buffer
	if _, err := Cosign(&cosigned, bytes.NewReader(build(t, smallDraft(t), publisher)), officer, CosignOptions{Now: func() time.Time { return testNow }}); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{
		"built by both": build(t, smallDraft(t), publisher, officer),
		"co-signed":     cosigned.Bytes(),
	} {
		t.Run(name, func(t *testing.T) {
			if !bytes.Equal(data, build(t, smallDraft(t), publisher, officer)) {
				t.Fatal("co-signing does not give the file built with both keys")
			}
			r, _, err := readAll(data, p, testNow)
			if err != nil {
				t.Fatal(err)
			}
			if s := r.Signers(); len(s) != 1 || !bytes.Equal(s[0].Key, pub(publisher)) {
				t.Fatalf("signers %+v, want the publisher alone", s)
			}
			_, _, err = readAll(data, &Policy{}, testNow)
			expectName(t, err, ErrUntrustedKey)
		})
	}
}

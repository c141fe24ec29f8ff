package bundle

import (
	"bytes"
	"crypto/ed25519"
	"testing"

	"github.com/fxamacker/cbor/v2"

	"github.com/ampbundle/ampbundle/amp"
)

// taggedVariants returns copies of item, a COSE_Sign, each with one CBOR
// tag added where the format allows none: around one of its items, or
// around the whole (tag 55799, self-described CBOR, which a decoder
// skips). Every copy is deterministic CBOR, and its signatures, over the
// same bytes, still verify.
func taggedVariants(t *testing.T, item []byte) map[string][]byte {
	t.Helper()
	var outer cbor.RawTag
	var parts, sigs, sig0 []cbor.RawMessage
	var bodyProt, payload, signProt, sig []byte
	un := func(data []byte, v any) {
		if err := amp.Unmarshal(data, v); err != nil {
			t.Fatal(err)
		}
	}
	un(item, &outer)
	un(outer.Content, &parts)
	un(parts[0], &bodyProt)
	un(parts[2], &payload)
	un(parts[3], &sigs)
	un(sigs[0], &sig0)
	un(sig0[0], &signProt)
	un(sig0[2], &sig)
	withSig := func(s0 any) []any {
		out := []any{s0}
		for _, s := range sigs[1:] {
			out = append(out, s)
		}
		return out
	}
	cose := func(content any) []byte {
		b, err := amp.Marshal(cbor.Tag{Number: coseSignTag, Content: content})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	tag := func(v any) cbor.Tag { return cbor.Tag{Number: 24, Content: v} }
	return map[string][]byte{
		"body protected header tagged": cose([]any{tag(bodyProt), parts[1], parts[2], parts[3]}),
		"payload tagged":               cose([]any{parts[0], parts[1], tag(payload), parts[3]}),
		"signature list tagged":        cose([]any{parts[0], parts[1], parts[2], tag(sigs)}),
		"signature protected tagged":   cose([]any{parts[0], parts[1], parts[2], withSig([]any{tag(signProt), sig0[1], sig0[2]})}),
		"signature bytes tagged":       cose([]any{parts[0], parts[1], parts[2], withSig([]any{sig0[0], sig0[1], tag(sig)})}),
		"cose array tagged":            cose(tag(parts)),
		"self-described cbor prefix":   append([]byte{0xd9, 0xd9, 0xf7}, item...),
	}
}

// TestSignedObjectWithATagOnOneOfItsItemsIsRefused
//
// Attack: anyone on the path (a courier, a mirror) wraps one item of a
// genuine bundle's signed manifest or statement in a CBOR tag (tag 24
// around the payload, any tag around a header, the signature list or a
// signature), or puts the self-described CBOR tag 55799 before tag 98.
// The file stays deterministic CBOR, the decoder took a tagged byte
// string or array for the bare one, and every signature still verified:
// one signed object had any number of files. A store kept and relayed
// the copy it got first (its delta and receipt hashes then name bytes
// the publisher never wrote), and a COSE library following RFC 9052,
// where a header and the payload are bare byte strings, refused it.
//
// Defence (docs/FORMAT.md §2: "no byte of item 0 can change without
// breaking a signature or the format"): decodeCOSE requires the item to
// be the one encoding of what it decoded; any other is unknown_format,
// on every path (a bundle, a delta header, a part index, a statement).
func TestSignedObjectWithATagOnOneOfItsItemsIsRefused(t *testing.T) {
	publisher := testKey(1)
	p := trust(publisher, "org.example")
	data := build(t, smallDraft(t), publisher)
	in, err := Inspect(bytes.NewReader(data), 0)
	if err != nil {
		t.Fatal(err)
	}
	rest := data[len(in.SignedManifest):]
	if _, _, err := readAll(data, p, testNow); err != nil {
		t.Fatalf("the genuine bundle: %v", err)
	}
	hb, err := SignHeartbeat(&Heartbeat{Format: HeartbeatFormat, BundleID: "org.example.demo", Version: 4, CreatedAt: "2026-01-01T00:00:00Z"}, []ed25519.PrivateKey{publisher})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := ParseHeartbeat(hb); err != nil {
		t.Fatalf("the genuine heartbeat: %v", err)
	}
	for name, item := range taggedVariants(t, in.SignedManifest) {
		t.Run("bundle/"+name, func(t *testing.T) {
			_, _, err := readAll(append(append([]byte(nil), item...), rest...), p, testNow)
			expectName(t, err, ErrUnknownFormat)
		})
	}
	for name, item := range taggedVariants(t, hb) {
		t.Run("heartbeat/"+name, func(t *testing.T) {
			_, _, err := ParseHeartbeat(item)
			expectName(t, err, ErrUnknownFormat)
			_, err = DecodeObject(item, MediaTypeHeartbeat)
			expectName(t, err, ErrUnknownFormat)
		})
	}
}

package resolver

import (
	"bytes"
	"testing"

	"github.com/ampbundle/ampbundle/bundle"
)

// withForgedCoSignature returns data co-signed by the key of seed n (which
// the caller's store need not trust) with that signature's bytes altered:
// a file carrying a forged signature under the kid of a real key.
func withForgedCoSignature(t *testing.T, data []byte, n byte) []byte {
	t.Helper()
	cp := cosignedByNobody(t, data, n)
	obj, err := bundle.DecodeObject(cp, bundle.ContentType(cp))
	if err != nil {
		t.Fatal(err)
	}
	kid := didOfPriv(testKeyN(n))
	for _, sg := range obj.Signatures {
		if sg.KID == kid {
			i := bytes.Index(cp, sg.Sig)
			if i < 0 {
				t.Fatal("test setup: the co-signature was not found")
			}
			cp[i] ^= 1
			return cp
		}
	}
	t.Fatal("test setup: no co-signature by the forged kid")
	return nil
}

// TestHeartbeatWithAForgedCoSignatureIsNotTheFileAStationRelays (review
// 16): the publisher's heartbeat H of org.example.translate is public.
// Anyone adds a signature under the kid of z — a key some downstream
// sites trust for the line, that this relaying station does not — with
// forged bytes, and has the copy applied at the station before H. Checked
// with bundle.VerifyFor alone (unknown kids ignored), the copy was kept,
// H after it was unchanged, and the station's mirror relayed the forged
// file only: every site trusting z refused it bad_signature and the line
// went stale there. A heartbeat, as a statement (TRUST-19), is refused
// unless every signature verifies against its kid's key, and the station
// keeps H.
func TestHeartbeatWithAForgedCoSignatureIsNotTheFileAStationRelays(t *testing.T) {
	k, z := sampleKey(t, "example-publisher"), testKeyN(252)
	h := heartbeat(t, "org.example.translate", 2, testNow, k)
	forged := withForgedCoSignature(t, h, 252)

	// A downstream site that trusts z for the line: the forged file is
	// tampered there.
	down := newStore(t)
	if err := down.TrustAdd("z", pub(z), []string{"org.example"}); err != nil {
		t.Fatal(err)
	}
	mustImport(t, down, variant(t, 1, nil))
	_, err := down.ApplyHeartbeat(forged)
	expectName(t, err, bundle.ErrBadSignature)

	// The relaying station, which does not know z.
	s := newStore(t)
	mustImport(t, s, variant(t, 1, nil))
	_, ferr := s.ApplyHeartbeat(forged)
	expectName(t, ferr, bundle.ErrBadSignature)
	if _, err := s.ApplyHeartbeat(h); err != nil {
		t.Fatal(err)
	}
	hs, err := s.Heartbeats()
	if err != nil || len(hs) != 1 {
		t.Fatalf("kept heartbeats: %v %v", hs, err)
	}
	if !bytes.Equal(hs[0].Data, h) {
		t.Fatal("the station relays another file than the publisher's heartbeat")
	}
	// A valid co-signature by a key the station does not know is still
	// accepted (a co-signer trusted elsewhere): only forged ones are
	// refused.
	if _, err := s.ApplyHeartbeat(cosignedByNobody(t, heartbeat(t, "org.example.translate", 3, testNow, k), 252)); err != nil {
		t.Fatalf("a heartbeat validly co-signed by a key the station does not trust: %v", err)
	}
}

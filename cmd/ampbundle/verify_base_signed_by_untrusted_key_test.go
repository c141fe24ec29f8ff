package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/ampbundle/ampbundle/bundle"
)

// TestVerifyBaseSignedByAKeyNotTrustedForTheDelta
//
// Attack (verify refuses what the store accepts, and the way round it is
// to trust a key one should not): 'ampbundle verify DELTA --base FILE'
// required the base file signed by a --trust key. The store takes the
// base's bytes from whatever copy it holds at the base version, whoever
// signed it, each checked against the delta's own signed manifest
// (BUNDLE-21, FORMAT.md §12.3): the base decides nothing. After a key
// rotation (v1 signed by the old key, the v2 delta by the new one) verify
// --trust NEW --base v1 refused untrusted_key, and its hint said to give
// the same --trust keys: to check the delta, the user had to trust the
// old, perhaps retired or compromised, key for the delta too (verify
// trusts every --trust key for every namespace). Now (BUNDLE-23) the
// base's own signatures count for the base alone: verified, the omitted
// artifacts checked against the base file's bytes; a base file whose
// bytes differ from the delta's signed hashes is still refused.
func TestVerifyBaseSignedByAKeyNotTrustedForTheDelta(t *testing.T) {
	dir := t.TempDir()
	newKey, newPub := filepath.Join(dir, "new.key.pem"), filepath.Join(dir, "new.pub.pem")
	mustRun(t, "keygen", "-o", newKey, "--pub", newPub)
	delta := filepath.Join(dir, "delta.ampb")
	mustRun(t, "build", translateV2Source(t), "-o", delta, "--key", newKey, "--created", "2026-11-10T00:00:00Z", "--base", sampleFile("translate"))

	var ver struct {
		Verified  bool `json:"verified"`
		NeedsBase bool `json:"needs_base"`
	}
	mustJSON(t, &ver, "verify", delta, "--trust", newPub, "--base", sampleFile("translate"))
	if !ver.Verified || ver.NeedsBase {
		t.Fatalf("verify --base over a base signed by another key: %+v", ver)
	}

	// A base whose bytes are not the ones the delta's manifest signs.
	data, err := os.ReadFile(sampleFile("translate"))
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)-2] ^= 1
	bad := filepath.Join(dir, "bad-base.ampb")
	if err := os.WriteFile(bad, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if r := runCLI(t, nil, "verify", delta, "--trust", newPub, "--base", bad, "--json"); r.code != 1 {
		t.Fatalf("verify --base over altered base bytes: exit %d, %s %s", r.code, r.stdout, r.stderr)
	}

	// A base whose signature does not verify against the key its kid
	// names (the last byte of item 0 is the last signature's) is still
	// refused, as every signature is (TRUST-20).
	data[len(data)-2] ^= 1
	in, err := bundle.Inspect(bytes.NewReader(data), 0)
	if err != nil {
		t.Fatal(err)
	}
	data[len(in.SignedManifest)-1] ^= 1
	if err := os.WriteFile(bad, data, 0o644); err != nil {
		t.Fatal(err)
	}
	failsWith(t, "bad_signature", "verify", delta, "--trust", newPub, "--base", bad)
}

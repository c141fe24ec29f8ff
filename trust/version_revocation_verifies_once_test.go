package trust_test

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/capability"
	"github.com/ampbundle/ampbundle/internal/testalloc"
	"github.com/ampbundle/ampbundle/trust"
)

// crossLine is the translate sample with its one capability moved to the
// namespace com.acme.translate, signed by keys: a line of org.example
// whose names the keys of org.example alone do not cover.
func crossLine(t testing.TB, keys ...ed25519.PrivateKey) trust.Installed {
	t.Helper()
	in := translate(t)
	_, m, ok := in.Manifest()
	if !ok {
		t.Fatal("the translate sample does not decode")
	}
	c := m.Capabilities[0]
	c.Name = "com.acme.translate.text"
	m.Capabilities, m.Aliases = []capability.Descriptor{c}, nil
	payload, err := m.Encode()
	if err != nil {
		t.Fatal(err)
	}
	signed, err := bundle.SignObject(bundle.MediaTypeManifest, payload, keys)
	if err != nil {
		t.Fatal(err)
	}
	return trust.Installed{BundleID: m.BundleID, Version: m.Version, Signed: signed}
}

// TestARevocationOfManyInstalledLinesVerifiesItsSignaturesOnce: a
// revocation of bundle versions must be signed, for each installed line
// it names, as that line's own bundles must be (checkVersionAuthority,
// docs/FORMAT.md §21). Each line asked bundle.VerifyFor, which verified
// every signature of the statement again, building the signed bytes (the
// whole payload) per signature: one key of org.example, with the seven
// keys its trust statements minted, signing a revocation of a version of
// each of its 1,000 installed lines (a 44 KB statement, nothing failing
// closed) cost 8,000 verifications and 479 MB allocated, quadratic in
// the statement's size, under the store's write lock and again at every
// site that syncs it (docs/SPEC-DECISIONS.md TRUST-32). The bytes one
// more line adds are measured (lines of 1,000 minus 500), not the time:
// at most 192 KB; 696 KB before, 76 KB now (the line's manifest decoded,
// its record copied). The answers stay: every version is
// revoked, and a line whose namespace the signers do not cover, named
// after 999 lines they do, is still refused untrusted_namespace with
// nothing returned.
func TestARevocationOfManyInstalledLinesVerifiesItsSignaturesOnce(t *testing.T) {
	keys, scopes := map[string]ed25519.PrivateKey{}, map[string][]string{}
	var signers []ed25519.PrivateKey
	for i := range bundle.MaxSignatures {
		n := fmt.Sprintf("k%d", i)
		keys[n], scopes[n] = numberedKey(i, 21), []string{"org.example"}
		signers = append(signers, keys[n])
	}
	line := resigned(t, 0, signers[0])
	apply := func(lines int, last trust.Installed) (*trust.State, *trust.RevocationEffects, uint64, error) {
		st := state(t, scopes, keys)
		delete(st.Installed, line.BundleID)
		var versions []bundle.BundleVersion
		for i := range lines {
			id := fmt.Sprintf("org.example.line%04d", i)
			st.Installed[id] = line
			if i == lines-1 {
				st.Installed[id] = last
			}
			versions = append(versions, bundle.BundleVersion{BundleID: id, Version: 999}) // not the installed version: nothing fails closed
		}
		data := versionRevocation(t, "org.example", versions, signers...)
		var next *trust.State
		var res *trust.RevocationEffects
		var err error
		got := testalloc.Least(func() { next, res, err = trust.ApplyRevocation(st, data, now) })
		return next, res, got, err
	}
	for _, tc := range []struct {
		name string
		last trust.Installed
		want amp.ErrName // "": applied
	}{
		{"every line signed as it needs", line, ""},
		{"the last line has a namespace its signers do not cover", crossLine(t, signers[0]), bundle.ErrUntrustedNamespace},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.want != "" {
				next, res, _, err := apply(1000, tc.last)
				if !errors.Is(err, tc.want) || next != nil || res != nil {
					t.Fatalf("err %v, state returned %v; want %s and nothing returned", err, next != nil, tc.want)
				}
				return
			}
			_, _, half, err := apply(500, tc.last)
			if err != nil {
				t.Fatal(err)
			}
			next, res, full, err := apply(1000, tc.last)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.RevokedBundles) != 1000 || len(next.RevokedVersions) != 1000 || len(res.FailedClosed) != 0 {
				t.Fatalf("revoked %d versions (%d kept), failed closed %v; want 1,000 and none", len(res.RevokedBundles), len(next.RevokedVersions), res.FailedClosed)
			}
			per := (int64(full) - int64(half)) / 500
			t.Logf("%d KB per line", per>>10)
			if per > 192<<10 {
				t.Fatalf("one more installed line named costs %d KB; want at most 192 KB: the statement's signatures are verified again per line", per>>10)
			}
		})
	}
}

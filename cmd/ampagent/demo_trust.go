package main

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/bundlebuild"
	"github.com/ampbundle/ampbundle/capability"
	"github.com/ampbundle/ampbundle/internal/cliutil"
	"github.com/ampbundle/ampbundle/resolver"
)

// stepTrust: k-of-n signing, a key rotation and a revocation, on a second
// store of their own: three officers, 2 of them must sign; one signature
// is refused, a co-signature added in "another room" is imported; a trust
// statement retires officer c and trusts officer d; a revocation of
// officer a, signed by b and d, makes the installed bundle fail closed.
func (d *demo) stepTrust(s *demoStep) error {
	officer := map[string]ed25519.PrivateKey{}
	for _, n := range []string{"a", "b", "c", "d"} {
		id, err := newIdentity(d.env.Rand)
		if err != nil {
			return err
		}
		officer[n] = id.SigningKey
	}
	pubOf := func(n string) ed25519.PublicKey { return officer[n].Public().(ed25519.PublicKey) }
	st, err := resolver.Open(filepath.Join(d.dir, "trust-store.db"), resolver.Options{Now: d.env.Now, Create: true})
	if err != nil {
		return err
	}
	defer st.Close()
	for _, n := range []string{"a", "b", "c"} {
		if err := st.TrustAdd("officer-"+n, pubOf(n), []string{demoNamespace}); err != nil {
			return err
		}
	}
	if err := st.TrustSetThreshold(demoNamespace, 2); err != nil {
		return err
	}
	s.note("policy", "trusts", "officers a, b, c for "+demoNamespace+"; threshold 2 distinct signatures")

	src := filepath.Join(d.dir, "source", "translate")
	draft, err := bundlebuild.LoadSource(src, bundlebuild.SourceOptions{CreatedAt: demoCreated, Signer: pubOf("a")})
	if err != nil {
		return err
	}
	var one bytes.Buffer
	if _, err := bundle.Write(&one, draft, []ed25519.PrivateKey{officer["a"]}, bundle.WriteOptions{}); err != nil {
		return err
	}
	_, err = st.Import(d.ctx, bytes.NewReader(one.Bytes()), resolver.ImportOptions{})
	s.note("one_signature", "officer a alone", errText(err))
	s.check(errors.Is(err, bundle.ErrThreshold), "one signature of a 2-of-3 scope is refused (threshold_not_met)")
	var two bytes.Buffer
	if _, err := bundle.Cosign(&two, bytes.NewReader(one.Bytes()), officer["b"], bundle.CosignOptions{Now: d.env.Now}); err != nil {
		return err
	}
	res, err := st.Import(d.ctx, bytes.NewReader(two.Bytes()), resolver.ImportOptions{})
	if err != nil {
		return err
	}
	s.note("co_signed", "co-signed by b", fmt.Sprintf("%d more bytes (one COSE signature); imported, signers %s", two.Len()-one.Len(), strings.Join(res.Signers, ", ")))
	s.check(len(res.Signers) == 2 && two.Len()-one.Len() < 200, "the co-signed bundle (manifest and artifacts untouched) is imported with 2 distinct signers")
	// A schema the bundle serves, to use again after the revocation.
	before, err := st.Catalog()
	if err != nil {
		return err
	}
	var ref capability.SchemaRef
	for _, es := range before.ByName {
		ref = es[0].Descriptor.InputSchema
	}
	if _, err := st.Resolve(ref); err != nil {
		return err
	}

	rot := &bundle.Rotation{Format: bundle.RotationFormat, Scope: demoNamespace, Sequence: 1, Prev: make([]byte, 32),
		CreatedAt: demoCreated.UTC().Format("2006-01-02T15:04:05Z"), Threshold: 2,
		Add: []bundle.NamedKey{{Name: "officer-d", Key: amp.DIDKey(pubOf("d"))}}, Retire: []string{amp.DIDKey(pubOf("c"))}}
	stmt, err := bundle.SignRotation(rot, []ed25519.PrivateKey{officer["a"], officer["b"]})
	if err != nil {
		return err
	}
	rr, err := st.ApplyRotation(stmt)
	if err != nil {
		return err
	}
	s.note("rotation", "rotation 1", fmt.Sprintf("signed by %s: added %s, retired %s", strings.Join(rr.Signers, ", "), strings.Join(rr.Added, ", "), strings.Join(rr.Retired, ", ")))
	keys, _ := st.TrustList()
	var names []string
	for _, k := range keys {
		names = append(names, k.Name)
	}
	s.check(strings.Join(names, ",") == "officer-a,officer-b,officer-d", "the trust statement retired officer c and trusts officer d: %s", strings.Join(names, ", "))

	rev := &bundle.Revocation{Format: bundle.RevocationFormat, Scope: demoNamespace, CreatedAt: rot.CreatedAt, Keys: []string{amp.DIDKey(pubOf("a"))}}
	rstmt, err := bundle.SignRevocation(rev, []ed25519.PrivateKey{officer["b"], officer["d"]})
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(d.dir, "revoke-officer-a.cbor"), rstmt, 0o644); err != nil {
		return cliutil.Failf("io_error", "cannot write the revocation").WithCause(err)
	}
	vr, err := st.ApplyRevocation(rstmt)
	if err != nil {
		return err
	}
	s.note("revocation", "revocation", fmt.Sprintf("of officer a, signed by %s: failed closed %s", strings.Join(vr.Signers, ", "), strings.Join(vr.FailedClosed, ", ")))
	_, resolveErr := st.Resolve(ref)
	cat, err := st.Catalog()
	if err != nil {
		return err
	}
	s.note("after", "after", errText(resolveErr))
	s.check(len(vr.FailedClosed) == 1 && len(cat.ByName) == 0 && errors.Is(resolveErr, resolver.ErrBundleRevoked),
		"the installed bundle (signers a and b, b alone below 2) fails closed: no capability offered, 5002 bundle_revoked")
	return nil
}

func errText(err error) string {
	if err == nil {
		return "accepted"
	}
	var e *amp.Error
	if errors.As(err, &e) {
		return string(amp.NameOf(e)) + ": " + e.Message
	}
	return err.Error()
}

package resolver

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/bundlebuild"
	"github.com/ampbundle/ampbundle/capability"
)

const translateCap = "org.example.translate.text:2.1.0"

func revocation(t *testing.T, scope string, keys []string, versions []bundle.BundleVersion, signers ...ed25519.PrivateKey) []byte {
	t.Helper()
	r := &bundle.Revocation{Format: bundle.RevocationFormat, Scope: scope, CreatedAt: "2026-11-22T12:00:00Z", Keys: keys, Bundles: versions}
	r.Normalize()
	data, err := bundle.SignRevocation(r, signers)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func didOfPriv(k ed25519.PrivateKey) string { return amp.DIDKey(pub(k)) }

// cosigned builds the translate sample at version, signed by keys.
func cosigned(t *testing.T, version uint64, keys ...ed25519.PrivateKey) []byte {
	t.Helper()
	d, err := bundlebuild.LoadSource(filepath.Join(samplesDir, "translate"), bundlebuild.SourceOptions{CreatedAt: testNow.Add(-time.Hour), Signer: pub(keys[0])})
	if err != nil {
		t.Fatal(err)
	}
	d.Version = version
	var buf bytes.Buffer
	if _, err := bundle.Write(&buf, d, keys, bundle.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestRevocationOfInstalledBundleFailsClosed: a revoked publisher key's
// installed bundle fails closed at the next resolution (5002
// bundle_revoked, also through a schema compiled before), leaves the
// catalog, stays listed as revoked, is audited, and the key cannot be
// trusted again.
func TestRevocationOfInstalledBundleFailsClosed(t *testing.T) {
	s := newStore(t)
	mustImport(t, s, variant(t, 1, nil))
	d := descriptor(t, s, translateCap)
	if _, err := s.Schema(d.InputSchema); err != nil {
		t.Fatal(err)
	}
	k := sampleKey(t, "example-publisher")
	res, err := s.ApplyRevocation(revocation(t, "org.example", []string{didOfPriv(k)}, nil, k))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.FailedClosed) != 1 || res.FailedClosed[0] != "org.example.translate@1" || len(res.RemovedTrust) != 1 {
		t.Fatalf("result %+v", res)
	}
	_, err = s.Resolve(d.InputSchema)
	expect5002(t, err, ErrBundleRevoked)
	_, err = s.Schema(d.InputSchema)
	expect5002(t, err, ErrBundleRevoked)
	c, _ := s.Catalog()
	if id, _ := capability.ParseID(translateCap); func() bool { _, ok := c.Lookup(id); return ok }() {
		t.Fatal("a revoked bundle's capability is still offered")
	}
	bs, _ := s.Bundles()
	if len(bs) != 1 || bs[0].Revoked == "" {
		t.Fatalf("bundles %+v", bs)
	}
	if e := lastAudit(t, s); e.Action != "revoke" || len(e.RevokedKeys) != 1 || len(e.RevokedBundles) != 1 || len(e.FileSHA256) != 32 {
		t.Fatalf("audit %+v", e)
	}
	err = s.TrustAdd("again", pub(k), []string{"org.example"})
	expectName(t, err, ErrKeyRevoked)
	// Applying it again changes nothing.
	res, err = s.ApplyRevocation(revocation(t, "org.example", []string{didOfPriv(k)}, nil, k))
	expectName(t, err, bundle.ErrUntrustedKey) // its only signer is no longer trusted
	_ = res
}

// TestRevocationOfBundleVersion: a revoked version fails closed and cannot
// be imported again; a newer version replaces it and is served.
func TestRevocationOfBundleVersion(t *testing.T) {
	s := newStore(t)
	mustImport(t, s, variant(t, 1, nil))
	k := sampleKey(t, "example-publisher")
	if _, err := s.ApplyRevocation(revocation(t, "org.example", nil, []bundle.BundleVersion{{BundleID: "org.example.translate", Version: 1}}, k)); err != nil {
		t.Fatal(err)
	}
	_, err := s.Resolve(descriptorRef(t, s))
	expect5002(t, err, ErrBundleRevoked)
	_, err = importBytes(t, s, variant(t, 1, nil), ImportOptions{AllowDowngrade: true})
	expectName(t, err, ErrRevoked)
	mustImport(t, s, variant(t, 2, nil))
	if _, err := s.Resolve(descriptor(t, s, translateCap).InputSchema); err != nil {
		t.Fatal(err)
	}
}

// descriptorRef returns the input schema reference of the translate
// capability from the stored descriptors, whatever the catalog offers.
func descriptorRef(t *testing.T, s *Store) capability.SchemaRef {
	t.Helper()
	var ref capability.SchemaRef
	err := s.db.View(func(tx *bolt.Tx) error {
		return bucket(tx, bDescriptors).ForEach(func(_, v []byte) error {
			var dr descRecord
			if err := decode(v, &dr); err != nil {
				return err
			}
			d, err := capability.DecodeDescriptor(dr.Descriptor)
			if err != nil {
				return err
			}
			ref = d.InputSchema
			return nil
		})
	})
	if err != nil || ref.ArtifactKey == "" {
		t.Fatalf("no descriptor: %v", err)
	}
	return ref
}

// TestRevocationScopeAndThreshold: a statement counts distinct keys
// trusted for its scope against that scope's threshold; it cannot revoke
// a key trusted for a broader scope; a co-signed bundle fails closed only when
// the signers left are below its threshold.
func TestRevocationScopeAndThreshold(t *testing.T) {
	a, b, c := testKeyN(11), testKeyN(12), testKeyN(13)
	s := newStore(t)
	for i, k := range []ed25519.PrivateKey{a, b, c} {
		if err := s.TrustAdd([]string{"a", "b", "c"}[i], pub(k), []string{"org.example"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.TrustSetThreshold("org.example", 2); err != nil {
		t.Fatal(err)
	}
	mustImport(t, s, cosigned(t, 1, a, b))
	acme := sampleKey(t, "acme-publisher")
	tests := []struct {
		name string
		data []byte
		want amp.ErrName
	}{
		{"one signer below the threshold", revocation(t, "org.example", []string{didOfPriv(c)}, nil, a), bundle.ErrThreshold},
		{"signed by a key of another scope", revocation(t, "org.example", []string{didOfPriv(c)}, nil, a, acme), bundle.ErrThreshold},
		{"key trusted for a broader scope", revocation(t, "org.example.tools", []string{didOfPriv(c)}, nil, a, b), ErrRevocationScope},
	}
	for _, tt := range tests {
		before := dumpBesidesAudit(t, s)
		_, err := s.ApplyRevocation(tt.data)
		if !errors.Is(err, tt.want) {
			t.Fatalf("%s: got %v, want %s", tt.name, err, tt.want)
		}
		if dumpBesidesAudit(t, s) != before {
			t.Fatalf("%s: a refused revocation changed the store", tt.name)
		}
	}
	// c revoked by a and b: the bundle signed by a and b is untouched.
	res, err := s.ApplyRevocation(revocation(t, "org.example", []string{didOfPriv(c)}, nil, a, b))
	if err != nil || len(res.FailedClosed) != 0 {
		t.Fatalf("%+v %v", res, err)
	}
	if _, err := s.Resolve(descriptorRef(t, s)); err != nil {
		t.Fatal(err)
	}
	// A third key d joins; a revoked by b and d leaves one signer of two.
	d := testKeyN(14)
	if err := s.TrustAdd("d", pub(d), []string{"org.example"}); err != nil {
		t.Fatal(err)
	}
	res, err = s.ApplyRevocation(revocation(t, "org.example", []string{didOfPriv(a)}, nil, b, d))
	if err != nil || len(res.FailedClosed) != 1 {
		t.Fatalf("%+v %v", res, err)
	}
	_, err = s.Resolve(descriptorRef(t, s))
	expect5002(t, err, ErrBundleRevoked)
}

// TestTrustRemoveFailClosed: trust rm leaves a bundle installed unless
// asked to fail it closed.
func TestTrustRemoveFailClosed(t *testing.T) {
	s := newStore(t)
	mustImport(t, s, variant(t, 1, nil))
	failed, err := s.TrustRemoveFailClosed("example")
	if err != nil || len(failed) != 1 {
		t.Fatalf("%v %v", failed, err)
	}
	_, err = s.Resolve(descriptorRef(t, s))
	expect5002(t, err, ErrBundleRevoked)
	if e := lastAudit(t, s); e.Action != "fail_closed" || e.TrustName != "example" {
		t.Fatalf("audit %+v", e)
	}
}

package resolver

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/bundlebuild"
)

// TestDIDOfAnotherNamespaceCannotBeSquatted
//
// Attack: checkDIDs refuses a DID that another bundle already documents,
// first come, first served across publishers. A publisher trusted only for
// com.acme ships, in a bundle of its own namespace, a DID document for
// did:web:agents.example.org, so that the org.example release documenting
// its own agent would be refused did_conflict.
//
// Defence (docs/FORMAT.md §5 step 7): a DID document's DID is scoped to
// its signers: a did:web's host, labels reversed, must lie under a scope
// of a counting signer (another method needs "*"), so the squat is refused
// untrusted_namespace before it reaches the store, and the org.example
// release installs.
func TestDIDOfAnotherNamespaceCannotBeSquatted(t *testing.T) {
	s := newStore(t) // acme trusted for com.acme, example for org.example
	acme := sampleKey(t, "acme-publisher")
	d, err := bundlebuild.LoadSource(filepath.Join(samplesDir, "geo"), bundlebuild.SourceOptions{CreatedAt: testNow.Add(-time.Hour), Signer: pub(acme)})
	if err != nil {
		t.Fatal(err)
	}
	const doc = `{"id":"did:web:agents.example.org","verificationMethod":[{"id":"#k","type":"Multikey","controller":"did:web:agents.example.org","publicKeyMultibase":"z6MkmjY8GnV5i9YTDtPETC2uUAW6ejw3nk5mXF5yci5ab7th"}],"assertionMethod":["#k"]}`
	d.Artifacts = append(d.Artifacts, bundle.BytesSource("dids/squat.json", bundle.MediaTypeDID, []byte(doc)))
	var squat bytes.Buffer
	if _, err := bundle.Write(&squat, d, []ed25519.PrivateKey{acme}, bundle.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := importBytes(t, s, squat.Bytes(), ImportOptions{}); !errors.Is(err, bundle.ErrUntrustedNamespace) {
		t.Fatalf("a com.acme bundle documenting did:web:agents.example.org: %v, want untrusted_namespace", err)
	}
	mustImport(t, s, sampleBytes(t, "translate"))
}

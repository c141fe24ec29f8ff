package catalog

import (
	"bytes"
	"crypto/ed25519"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/capability"
)

// TestSpoofedPublisherIsShownAsAnUnverifiedClaim: a bundle signed only by
// the hostile key claims, in its signed manifest, the did:key of the
// trusted "example" publisher. Nothing checks that claim against the
// signers, so the bundle page must not present it as the publisher: it
// shows it as a claim, and the hostile key as the verified signer.
func TestSpoofedPublisherIsShownAsAnUnverifiedClaim(t *testing.T) {
	victim := amp.DIDKey(examplePub(t))
	v, _ := capability.ParseVersion("1.0.0")
	var file bytes.Buffer
	if _, err := bundle.Write(&file, &bundle.Draft{
		BundleID: "org.hostile", Version: 1, CreatedAt: testNow.Add(-time.Hour), Publisher: victim,
		Artifacts: []bundle.Source{bundle.BytesSource("s.json", bundle.MediaTypeSchema, []byte(`{"type":"object"}`))},
		Capabilities: []capability.Descriptor{{Name: "org.hostile.spoof", Version: v,
			InputSchema: capability.SchemaRef{ArtifactKey: "s.json"}, OutputSchema: capability.SchemaRef{ArtifactKey: "s.json"}}},
	}, []ed25519.PrivateKey{hostileKey}, bundle.WriteOptions{}); err != nil {
		t.Fatalf("the writer refuses the claim: %v", err)
	}
	h := newHandler(t, newStore(t, file.Bytes()))
	_, body := get(t, h, http.MethodGet, "/ui/bundle?id=org.hostile")
	_, trust := get(t, h, http.MethodGet, "/ui/trust")
	if strings.Contains(body, "<dt>Publisher</dt><dd>"+victim) && strings.Contains(trust, victim) {
		t.Errorf("the hostile-signed bundle is shown with Publisher %s, the trusted example key's DID", victim)
	}
	if !strings.Contains(body, "<dt>Claimed publisher (not verified)</dt>") {
		t.Errorf("the publisher's claim is not marked as unverified")
	}
	hostile := amp.DIDKey(hostileKey.Public().(ed25519.PublicKey))
	if !strings.Contains(body, "<dt>Verified signers</dt><dd><strong>hostile</strong> <code class=\"id\">"+hostile+"</code></dd>") {
		t.Errorf("the verified signer is not shown")
	}
	b, _ := h.Model().Bundle("org.hostile")
	if b.PublisherVerified {
		t.Errorf("the claim of another key's DID is verified")
	}
}

// TestPublisherNamingItsSignerIsVerified: a bundle whose manifest names
// its own signer's did:key shows it as the publisher.
func TestPublisherNamingItsSignerIsVerified(t *testing.T) {
	own := amp.DIDKey(hostileKey.Public().(ed25519.PublicKey))
	v, _ := capability.ParseVersion("1.0.0")
	var file bytes.Buffer
	if _, err := bundle.Write(&file, &bundle.Draft{
		BundleID: "org.hostile", Version: 1, CreatedAt: testNow.Add(-time.Hour), Publisher: own,
		Artifacts: []bundle.Source{bundle.BytesSource("s.json", bundle.MediaTypeSchema, []byte(`{"type":"object"}`))},
		Capabilities: []capability.Descriptor{{Name: "org.hostile.own", Version: v,
			InputSchema: capability.SchemaRef{ArtifactKey: "s.json"}, OutputSchema: capability.SchemaRef{ArtifactKey: "s.json"}}},
	}, []ed25519.PrivateKey{hostileKey}, bundle.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	h := newHandler(t, newStore(t, file.Bytes()))
	_, body := get(t, h, http.MethodGet, "/ui/bundle?id=org.hostile")
	if !strings.Contains(body, "<dt>Publisher</dt><dd>"+own+" (a verified signer)</dd>") {
		t.Errorf("a publisher that is the bundle's signer is not shown as verified")
	}
}

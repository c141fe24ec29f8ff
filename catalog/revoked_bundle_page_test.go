package catalog

import (
	"crypto/ed25519"
	"net/http"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/resolver"
)

// revokeHostile applies, to the store at p, a revocation of
// org.hostile@1 signed by the hostile key, which stays trusted.
func revokeHostile(t *testing.T, p string) {
	t.Helper()
	s, err := resolver.Open(p, resolver.Options{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r := &bundle.Revocation{Format: bundle.RevocationFormat, Scope: "org.hostile", CreatedAt: "2026-11-20T11:30:00Z",
		Bundles: []bundle.BundleVersion{{BundleID: "org.hostile", Version: 1}}}
	stmt, err := bundle.SignRevocation(r, []ed25519.PrivateKey{hostileKey})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.ApplyRevocation(stmt); err != nil {
		t.Fatal(err)
	}
}

// TestRevokedBundlePageCannotReadAsUsable: a revocation statement
// revoked org.hostile@1 while its signer stays trusted. The bundle page
// showed the signed manifest as for a bundle in use: its signature
// "verified, trusted as hostile", its publisher's key verified, its
// capabilities listed under "Capabilities", and the revocation only in
// the tenth row of the table. The page now says first, in its title and
// in an alert before the table, that the bundle is revoked and that the
// store offers none of its capabilities (bundle_revoked), and heads the
// manifest's capabilities "none offered"; the manifest and the
// revocation's reason stay shown (the history is not hidden).
func TestRevokedBundlePageCannotReadAsUsable(t *testing.T) {
	p := newStore(t, hostileBundle(t))
	revokeHostile(t, p)
	h := newHandler(t, p)
	b, ok := h.Model().Bundle("org.hostile")
	if !ok || b.Revoked == "" {
		t.Fatalf("the revocation did not revoke the bundle: %+v", b.Bundle)
	}
	res, body := get(t, h, http.MethodGet, "/ui/bundle?id=org.hostile")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("status %d", res.StatusCode)
	}
	alert := strings.Index(body, `role="alert"`)
	table := strings.Index(body, "<dt>Verified signers</dt>")
	for _, c := range []struct {
		what string
		ok   bool
	}{
		{"the title says it is revoked", strings.Contains(body, "<title>Bundle org.hostile (revoked)")},
		{"an alert before the table says so", alert >= 0 && alert < table},
		{"the alert names the error of every use", strings.Contains(body, "<code>bundle_revoked</code>")},
		{"the capabilities are headed as not offered", strings.Contains(body, "Capabilities (none offered: the bundle is revoked)")},
		{"the manifest is still shown", strings.Contains(body, "org.hostile.script")},
		{"the revocation's reason is still shown", strings.Contains(body, short(b.Revoked))},
	} {
		if !c.ok {
			t.Errorf("%s: not so", c.what)
		}
	}

	// A bundle in use says nothing of the kind.
	res, body = get(t, h, http.MethodGet, "/ui/bundle?id=org.example.translate")
	if res.StatusCode != http.StatusOK || strings.Contains(body, `role="alert"`) || strings.Contains(body, "none offered") {
		t.Errorf("a bundle in use reads as unusable")
	}
}

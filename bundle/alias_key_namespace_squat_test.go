package bundle

import (
	"crypto/ed25519"
	"slices"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
)

// TestAliasKeyInAnotherNamespaceIsRefused
//
// Attack: a publisher trusted only for org.example signs a bundle of its
// own namespace whose "aliases" map carries, as a legacy type, the
// canonical capability name of another namespace
// ("com.acme.geo.geocode" -> "org.example.demo.echo"). A resolver that lets
// an explicit alias win over an exact name answers a caller who sends type
// "com.acme.geo.geocode" with the attacker's capability: the bundle
// reaches into com.acme.
//
// Defence (docs/SPEC-DECISIONS.md BUNDLE-7): an alias key that is itself a
// valid capability name is scoped like a capability name
// (Manifest.Namespaces): every counting signer must be trusted for its
// namespace (untrusted_namespace), and its namespace's threshold applies.
// A legacy type that is no capability name ("echo") reaches nowhere.
func TestAliasKeyInAnotherNamespaceIsRefused(t *testing.T) {
	k, k2 := testKey(1), testKey(2)
	both := func() *Policy { return trust(k, "org.example", "com.acme") }
	for _, c := range []struct {
		name    string
		aliases map[string]string
		policy  *Policy
		keys    []ed25519.PrivateKey
		want    amp.ErrName // "" accepted
	}{
		{"capability name of another namespace", map[string]string{"com.acme.geo.geocode": "org.example.demo.echo"}, trust(k, "org.example"), nil, ErrUntrustedNamespace},
		{"beside a plain legacy type", map[string]string{"echo": "org.example.demo.echo", "com.acme.geo.geocode": "org.example.demo.echo"}, trust(k, "org.example"), nil, ErrUntrustedNamespace},
		{"a scope excepting it", map[string]string{"org.example.other.geocode": "org.example.demo.echo"},
			&Policy{Keys: []TrustedKey{{Name: "test", Key: pub(k), Scopes: []string{"org.example"}, Except: []string{"org.example.other"}}}}, nil, ErrUntrustedNamespace},
		{"signer trusted for that namespace too", map[string]string{"com.acme.geo.geocode": "org.example.demo.echo"}, both(), nil, ""},
		{"its namespace's threshold counts", map[string]string{"com.acme.geo.geocode": "org.example.demo.echo"},
			func() *Policy { p := both(); p.Thresholds = map[string]int{"com.acme": 2}; return p }(), nil, ErrThreshold},
		{"threshold met by two keys", map[string]string{"com.acme.geo.geocode": "org.example.demo.echo"},
			&Policy{Thresholds: map[string]int{"com.acme": 2}, Keys: []TrustedKey{
				{Name: "a", Key: pub(k), Scopes: []string{"org.example", "com.acme"}},
				{Name: "b", Key: pub(k2), Scopes: []string{"org.example", "com.acme"}}}}, []ed25519.PrivateKey{k, k2}, ""},
		{"capability name of its own namespace", map[string]string{"org.example.demo.old-echo": "org.example.demo.echo"}, trust(k, "org.example"), nil, ""},
		{"legacy type that is no name", map[string]string{"echo": "org.example.demo.echo", "v1.echo": "org.example.demo.echo"}, trust(k, "org.example"), nil, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := smallDraft(t)
			d.Aliases = c.aliases
			keys := c.keys
			if keys == nil {
				keys = []ed25519.PrivateKey{k}
			}
			_, _, err := readAll(build(t, d, keys...), c.policy, testNow)
			if c.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			expectName(t, err, c.want)
		})
	}
}

// TestManifestNamespacesNameAliasKeys pins what a signer must be trusted
// for: the capability namespaces and those of alias keys that are
// capability names, sorted and unique; legacy types that are no name add
// nothing.
func TestManifestNamespacesNameAliasKeys(t *testing.T) {
	m := &Manifest{Aliases: map[string]string{"translate": "x", "v1.echo": "x", "com.acme.geo.geocode": "x", "Com.Acme.geo.x": "x", "org.example.demo.y": "x"}}
	d := smallDraft(t)
	m.Capabilities = d.Capabilities
	if got, want := m.Namespaces(), []string{"com.acme.geo", "org.example.demo"}; !slices.Equal(got, want) {
		t.Fatalf("Namespaces() = %v, want %v", got, want)
	}
}

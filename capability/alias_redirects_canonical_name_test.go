package capability

import "testing"

// TestAliasNeverRedirectsAnInstalledCanonicalName
//
// Attack: a bundle's alias table carries, as a legacy type, the canonical
// name of another capability ("com.acme.geo.geocode" ->
// "org.example.demo.echo"). If an explicit alias won over an exact name, a
// caller sending type "com.acme.geo.geocode" would be answered by the
// alias's target instead of the capability it named.
//
// Defence in depth (docs/SPEC-DECISIONS.md BUNDLE-7; the reader already
// scopes such alias keys): a type that is a known canonical name resolves
// to itself before any alias is looked at. An alias of a name that is not
// known still applies.
func TestAliasNeverRedirectsAnInstalledCanonicalName(t *testing.T) {
	known := []string{"com.acme.geo.geocode", "org.example.demo.echo"}
	aliases := map[string]string{"com.acme.geo.geocode": "org.example.demo.echo", "com.gone.geo.geocode": "org.example.demo.echo"}
	for _, c := range []struct{ typ, want string }{
		{"com.acme.geo.geocode", "com.acme.geo.geocode"},
		{"org.example.demo.echo", "org.example.demo.echo"},
		{"com.gone.geo.geocode", "org.example.demo.echo"},
	} {
		got, err := ResolveType(c.typ, aliases, known)
		if err != nil || got != c.want {
			t.Errorf("ResolveType(%q) = %q, %v; want %q", c.typ, got, err, c.want)
		}
	}
}

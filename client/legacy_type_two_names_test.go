package client

import (
	"context"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/capability"
)

// TestLegacyTypeQueryPageCannotNameTwoCapabilities: a query by a legacy
// alias only (Filter.Type, no Filter.Capability) is resolved by the
// provider's alias table to one capability. A hostile agent answers it
// with one signed CAP_DECLARE page declaring org.example.x 1.0.0 and
// org.evil.y 1.0.0. Taken by Query (one page: 'ampagent query --type'
// without --all), org.evil.y would be shown as what the alias names.
// Query and QueryAll apply one rule (inFilter): every descriptor of a
// Type-only answer, all pages together, has one name (4001 outside_filter,
// CAP-6).
func TestLegacyTypeQueryPageCannotNameTwoCapabilities(t *testing.T) {
	ref := capability.SchemaRef{URI: "https://x.example/s", HashAlg: "sha-256", Hash: make([]byte, 32)}
	v, _ := capability.ParseVersion("1.0.0")
	p := newParties(t)
	tr := p.scripted(t, func(m *amp.Message, send *amp.Sender) ([]byte, error) {
		body, err := capability.Declare{Capabilities: []capability.Descriptor{
			{Name: "org.example.x", Version: v, InputSchema: ref, OutputSchema: ref},
			{Name: "org.evil.y", Version: v, InputSchema: ref, OutputSchema: ref},
		}}.Encode()
		if err != nil {
			return nil, err
		}
		_, out, err := send.Seal(context.Background(), amp.Draft{Type: amp.TypeCapDeclare, To: amp.To(m.From), ReplyTo: m.ID[:], Body: body})
		return out, err
	})
	q := capability.Query{Filter: capability.Filter{Type: "legacy-x"}}
	cl := p.client(t, tr)
	if _, err := cl.QueryAll(context.Background(), q); err == nil {
		t.Fatal("QueryAll took two names for one legacy type (the premise of CAP-6 is gone)")
	}
	if d, _, err := cl.Query(context.Background(), q); err == nil {
		t.Errorf("Query by legacy type returned %d descriptors under different names (%s, %s) as the verified answer",
			len(d.Capabilities), d.Capabilities[0].Name, d.Capabilities[1].Name)
	}
}

package client

import (
	"context"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/capability"
)

// TestDeclareOutsideTheFilterIsRefused: asked for org.example.x in
// ">=2.0.0 <3.0.0", a hostile agent declares org.evil.y 2.0.0, or
// org.example.x 1.0.0 or 9.9.9, in a signed CAP_DECLARE. Returned as the
// answer, the caller ('ampagent query' prints it as verified) would get
// descriptors it never asked for, and pick a version to invoke from them.
// RFC 004 §6.1-6.2 answer a query with the descriptors that match its
// filter: Query and QueryAll refuse the page (4001 outside_filter, CAP-6).
func TestDeclareOutsideTheFilterIsRefused(t *testing.T) {
	ref := capability.SchemaRef{URI: "https://x.example/s", HashAlg: "sha-256", Hash: make([]byte, 32)}
	rng, err := capability.ParseRange(">=2.0.0 <3.0.0")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, version string }{{"org.evil.y", "2.0.0"}, {"org.example.x", "1.0.0"}, {"org.example.x", "9.9.9"}} {
		p := newParties(t)
		v, _ := capability.ParseVersion(c.version)
		tr := p.scripted(t, func(m *amp.Message, send *amp.Sender) ([]byte, error) {
			body, err := capability.Declare{Capabilities: []capability.Descriptor{{Name: c.name, Version: v, InputSchema: ref, OutputSchema: ref}}}.Encode()
			if err != nil {
				return nil, err
			}
			_, out, err := send.Seal(context.Background(), amp.Draft{Type: amp.TypeCapDeclare, To: amp.To(m.From), ReplyTo: m.ID[:], Body: body})
			return out, err
		})
		q := capability.Query{Filter: capability.Filter{Capability: "org.example.x", Version: rng}}
		cl := p.client(t, tr)
		if d, _, err := cl.Query(context.Background(), q); err == nil {
			t.Errorf("Query for org.example.x %s returned %s:%s", rng, d.Capabilities[0].Name, d.Capabilities[0].Version)
		}
		if ds, err := cl.QueryAll(context.Background(), q); err == nil {
			t.Errorf("QueryAll for org.example.x %s returned %s:%s", rng, ds[0].Name, ds[0].Version)
		}
	}
}

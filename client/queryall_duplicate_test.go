package client

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/capability"
)

// TestQueryAllRefusesDuplicatedDescriptors: a hostile agent returns the
// same descriptor on every page, with a fresh cursor each time. RFC 004
// §6.5: page boundaries MUST NOT duplicate records. Appending every page as
// it comes would return the same name:version several times (up to
// MaxDescriptors), which a caller counts or lists as distinct versions. A
// name:version seen on an earlier page makes QueryAll fail (4001
// duplicate_descriptor, CAP-6), as a repeated cursor does.
func TestQueryAllRefusesDuplicatedDescriptors(t *testing.T) {
	p := newParties(t)
	ref := capability.SchemaRef{URI: "https://x.example/s", HashAlg: "sha-256", Hash: make([]byte, 32)}
	v, _ := capability.ParseVersion("1.0.0")
	var page atomic.Int64
	tr := p.scripted(t, func(m *amp.Message, send *amp.Sender) ([]byte, error) {
		next := ""
		if page.Add(1) < 3 {
			next = "c" + string(rune('0'+page.Load()))
		}
		body, err := capability.Declare{Capabilities: []capability.Descriptor{{Name: "org.example.x", Version: v, InputSchema: ref, OutputSchema: ref}},
			NextCursor: next}.Encode()
		if err != nil {
			return nil, err
		}
		_, out, err := send.Seal(context.Background(), amp.Draft{Type: amp.TypeCapDeclare, To: amp.To(m.From), ReplyTo: m.ID[:], Body: body})
		return out, err
	})
	ds, err := p.client(t, tr).QueryAll(context.Background(), capability.Query{Filter: capability.Filter{Capability: "org.example.x"}})
	if err == nil {
		t.Errorf("QueryAll returned %d descriptors for one name:version served on 3 pages", len(ds))
	}
}

package agh_test

import (
	"encoding/json"
	"fmt"

	"github.com/ampbundle/ampbundle/agh"
)

// A peer projects its catalog onto its card, answers a rich whois asking
// for one capability, and the digest it sends is the one a transfer of the
// same record carries.
func Example() {
	catalog := []agh.Capability{
		{ID: "build-site", Summary: "Build the landing page.", Outcome: "A finished landing page.", Version: "1.0.0"},
		{ID: "review-copy", Summary: "Review conversion copy.", Outcome: "Reviewed copy."},
	}
	card := &agh.PeerCard{Extra: map[string]json.RawMessage{"peer_id": json.RawMessage(`"designer.session-19"`)}}
	agh.ProjectPeerCard(card, catalog)
	out, _ := json.Marshal(card)
	fmt.Println(string(out))

	req, _ := agh.ParseWhoisRequest([]byte(`{"agh.include":["capability_catalog"],"agh.capability_ids":["review-copy"]}`))
	rich, _ := agh.RichCatalog(catalog, req, 64<<10)
	body, _ := agh.TransferBody(catalog[1])
	var tb struct {
		Capability json.RawMessage `json:"capability"`
	}
	json.Unmarshal(body, &tb)
	got, err := agh.VerifyCapability(tb.Capability)
	fmt.Println(len(rich.Capabilities), rich.Capabilities[0].ID, got.Digest == rich.Capabilities[0].Digest, err)
	// Output:
	// {"capabilities":["build-site","review-copy"],"ext":{"agh.capabilities_brief":[{"id":"build-site","summary":"Build the landing page."},{"id":"review-copy","summary":"Review conversion copy."}]},"peer_id":"designer.session-19"}
	// 1 review-copy true <nil>
}

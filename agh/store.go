package agh

import (
	"encoding/hex"
	"encoding/json"
	"strings"

	"github.com/ampbundle/ampbundle/resolver"
)

// Extra members this package adds to the capability documents it builds
// from a store (namespaced, so AGH peers that do not know them keep them).
const (
	KeyBundleID     = "ampbundle.bundle_id"
	KeyInputSchema  = "ampbundle.input_schema"
	KeyOutputSchema = "ampbundle.output_schema"
)

// FromCatalog projects the installed capabilities of a store, in catalog
// order (names bytewise, versions ascending): id "name:version", version,
// summary the first line of the descriptor's notes (else the name and
// version), outcome a fixed sentence, and the providing bundle and schema
// hashes as ampbundle.* members.
func FromCatalog(cat *resolver.Catalog) []Capability {
	out := []Capability{}
	for _, name := range cat.Names {
		for _, e := range cat.ByName[name] {
			d := e.Descriptor
			summary, _, _ := strings.Cut(strings.TrimSpace(d.Notes), "\n")
			if summary = strings.TrimSpace(summary); summary == "" {
				summary = d.Name + " version " + d.Version.String()
			}
			ref := func(alg string, h []byte) json.RawMessage {
				b, _ := json.Marshal(alg + ":" + hex.EncodeToString(h))
				return b
			}
			bid, _ := json.Marshal(e.BundleID)
			out = append(out, Capability{
				ID:      d.ID().String(),
				Summary: summary,
				Outcome: "A result valid against the output schema of " + d.ID().String() + ", verified offline.",
				Version: d.Version.String(),
				Extra: map[string]json.RawMessage{
					KeyBundleID:     bid,
					KeyInputSchema:  ref(d.InputSchema.HashAlg, d.InputSchema.Hash),
					KeyOutputSchema: ref(d.OutputSchema.HashAlg, d.OutputSchema.Hash),
				},
			})
		}
	}
	return out
}

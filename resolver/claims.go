package resolver

import (
	bolt "go.etcd.io/bbolt"

	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/compat"
)

// checkClaims re-derives the compatibility claims of the bundle being
// imported from its own staged schemas (the stagedLoader of the offline
// compile check) and refuses (false_compatibility_claim) a bundle whose
// signed claims or policy they contradict: a publisher's checker bug or a
// forged claim never reaches an agent (docs/FORMAT.md, "Compatibility
// policy and signed claims").
func (s *Store) checkClaims(m *bundle.Manifest, arts []staged) error {
	declared := false
	for _, d := range m.Capabilities {
		if d.Policy != "" || d.CompatClaims != nil {
			declared = true
		}
	}
	if !declared {
		return nil
	}
	l := &stagedLoader{byKey: map[string]staged{}, ids: map[string]string{}, bridges: true}
	for _, a := range arts {
		if a.entry.MediaType != bundle.MediaTypeSchema && a.entry.MediaType != bundle.MediaTypeBridge {
			continue
		}
		l.byKey[a.entry.Key] = a
		if a.schemaID != "" {
			l.ids[a.schemaID] = a.entry.Key
		}
	}
	return s.db.View(func(tx *bolt.Tx) error {
		l.tx = tx
		return compat.VerifyClaims(m.Capabilities, compat.NewSource(l))
	})
}

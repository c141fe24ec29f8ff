package catalog

import "context"

// pretty is prettyFor without a request (tests).
func (m *Model) pretty(s Schema, prefix string) []Tok {
	toks, _ := m.prettyFor(context.Background(), s, prefix)
	return toks
}

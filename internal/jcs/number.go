package jcs

import "github.com/ampbundle/ampbundle/internal/jsonnum"

// parseDouble is the double value of a JSON number, ErrNumber when it is
// not one or its double is infinite. The rounding is internal/jsonnum's,
// the module's one reader of a number's double: exact and linear in the
// text, subnormals, numbers near a rounding boundary and numbers of more
// than 800 digits before their point included (docs/SPEC-DECISIONS.md
// AGH-20, AGH-21, JSON-3).
func parseDouble(s string) (float64, error) {
	f, err := jsonnum.ParseFloat(s)
	if err != nil {
		return 0, ErrNumber
	}
	return f, nil
}

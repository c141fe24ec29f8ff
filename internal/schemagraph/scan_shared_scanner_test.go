package schemagraph

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/internal/jsonnum"
)

// oldScan is scan as it was before it read with jsonnum's Scanner
// (docs/SPEC-DECISIONS.md JSON-13), kept as the oracle.
func oldScan(data []byte, numbers bool) (deepest int, slow bool) {
	depth := 0
	inStr, esc := false, false
	for i := 0; i < len(data); i++ {
		switch c := data[i]; {
		case inStr:
			if esc {
				esc = false
			} else if c == '\\' {
				esc = true
			} else if c == '"' {
				inStr = false
			}
		case c == '"':
			inStr = true
		case c == '{' || c == '[':
			depth++
			deepest = max(deepest, depth)
		case c == '}' || c == ']':
			depth--
		case numbers && !slow && (c == '-' || '0' <= c && c <= '9'):
			j := i + 1
			for j < len(data) && strings.IndexByte("0123456789+-.eE", data[j]) >= 0 {
				j++
			}
			slow = !jsonnum.StrconvFast(string(data[i:j]))
			i = j - 1
		}
	}
	return deepest, slow
}

// TestScanReadsTheNestingAndNumbersItReadBefore (guard: three copies of
// one byte scanner, client's, this package's and bundlebuild's, could
// drift apart, and bundlebuild charge a schema for another path than the
// one decode takes): scan, now on jsonnum's Scanner, gives the same
// nesting and the same verdict on its numbers as the loop it replaced,
// on texts of JSON's bytes in random order (strings left open, a
// backslash last, brackets in strings, numbers against letters).
func TestScanReadsTheNestingAndNumbersItReadBefore(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	alphabet := []byte(`{}[],: "\-+.eE0123456789truefalsnl` + "\t\n\x00\xff")
	texts := [][]byte{nil, []byte(`"`), []byte(`"\`), []byte(`{"[":[1e-320,"\"{"]}`), []byte(`[[1,2],{"a":5e-324}]`)}
	for range 5000 {
		b := make([]byte, rng.IntN(40))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		texts = append(texts, b)
	}
	for _, data := range texts {
		for _, numbers := range []bool{false, true} {
			d, s := scan(data, numbers)
			wd, ws := oldScan(data, numbers)
			if d != wd || s != ws {
				t.Fatalf("%q (numbers %v): %d %v, want %d %v", data, numbers, d, s, wd, ws)
			}
		}
	}
}

// TestSchemaOfOrdinaryFarNumbersIsDecodedByEncodingJSON: attack
// (over-charge): a schema holding one ordinary number beyond 10^±30
// (1e100, a shortest double near 1e-300), which strconv rounds in tens
// of nanoseconds, was taken for one holding a slow number
// (jsonnum.StrconvFast's old window), so Parse with Float64 and
// EncodingJSON decoded it with every number kept as text, and
// bundlebuild charged its numbers as text (JSON-8): 64 bytes and 3 a
// byte more for each. Now scan vouches for them and the document takes
// encoding/json's own path; one with a subnormal or a 20-digit midpoint
// near 1e300 still does not (docs/SPEC-DECISIONS.md JSON-12).
func TestSchemaOfOrdinaryFarNumbersIsDecodedByEncodingJSON(t *testing.T) {
	for _, c := range []struct {
		doc  string
		slow bool
	}{
		{`{"enum":[1e100,1.5]}`, false},
		{`{"maximum":1.7976931348623157e308,"minimum":-1e-300}`, false},
		{`{"const":1.0000000000000001110e+300}`, false},
		{`{"enum":[1e100,1e-320]}`, true},
		{`{"const":1.0000000000000001269e+300}`, true},
	} {
		if _, slow := scan([]byte(c.doc), true); slow != c.slow {
			t.Errorf("%s: slow %v, want %v", c.doc, slow, c.slow)
		}
		v, err := Parse([]byte(c.doc), Options{Float64: true, EncodingJSON: true})
		w, werr := Parse([]byte(c.doc), Options{Float64: true, Duplicate: func(string) {}})
		if err != nil || werr != nil || !equalTrees(v, w) {
			t.Errorf("%s: %v %v, token path %v %v", c.doc, v, err, w, werr)
		}
	}
}

// equalTrees compares two parse trees of maps, slices and scalars.
func equalTrees(a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			if !equalTrees(v, y[k]) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equalTrees(x[i], y[i]) {
				return false
			}
		}
		return true
	}
	return a == b
}

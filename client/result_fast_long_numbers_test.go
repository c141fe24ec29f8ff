package client

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
)

// TestResultOfLongNumbersStrconvRoundsFastIsDecoded: attack
// (over-refusal): slowFor kept its own rule, which took every number of
// more than 19 digits beyond 10^±30 for one strconv rounds on its
// decimal fallback, so a result of 65 such numbers was refused
// result_too_costly though strconv's Eisel-Lemire path rounds each in
// under 0.1 µs (1.0000000000000001110e+300: 63 ns, measured, Go 1.26;
// the "21-digit midpoint" JSON-9's test refused was no midpoint). It now
// takes jsonnum.StrconvFast, the one rule (docs/SPEC-DECISIONS.md
// JSON-12): such numbers are decoded, and a number whose first 19 digits
// do not decide its double (a midpoint cut to 20 digits) is still
// counted.
func TestResultOfLongNumbersStrconvRoundsFastIsDecoded(t *testing.T) {
	over := MaxSlowResultNumbers + 1
	cases := []struct {
		name, item string
		refused    bool
	}{
		{"20 digits, the last 0, near 1e300", "1.0000000000000001110e+300", false},
		{"20 digits near 1e300", "1.0000000000000001111e+300", false},
		{"23 digits near 1e-250", "1.2345678901234567891234e-250", false},
		{"25 digits near -1e200", "-9.876543210987654321098765e+200", false},
		{"30 digits near 1e-100", "1.23456789012345678901234567891e-100", false},
		{"20-digit midpoints near 1e300", "1.0000000000000001269e+300", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := decodeResult[[]float64](jsonArray(tc.item, over))
			switch {
			case tc.refused && amp.NameOf(err) != ErrResultCost:
				t.Fatalf("decoded with %v, want %s", err, ErrResultCost)
			case !tc.refused && (err != nil || len(got) != over):
				t.Fatalf("%d values, %v; want %d decoded", len(got), err, over)
			}
		})
	}
}

// oldScanJSON is scanJSON as it was before it read with jsonnum's
// Scanner (docs/SPEC-DECISIONS.md JSON-13), kept as the oracle.
func oldScanJSON(data []byte, number func(i, j int) bool, str func(lit []byte, escaped bool) bool) {
	for i := 0; i < len(data); {
		switch c := data[i]; {
		case c == '"':
			j := i + 1
			escaped := false
			for j < len(data) && data[j] != '"' {
				if data[j] == '\\' {
					escaped = true
					j++
				}
				j++
			}
			j = min(j+1, len(data))
			if str != nil && !str(data[i:j], escaped) {
				return
			}
			i = j
		case c == '-' || '0' <= c && c <= '9':
			j := i + 1
			for j < len(data) && strings.IndexByte("0123456789.eE+-", data[j]) >= 0 {
				j++
			}
			if !number(i, j) {
				return
			}
			i = j
		default:
			i++
		}
	}
}

// TestResultScanReadsTheNumbersAndStringsItReadBefore (guard: three
// copies of one byte scanner, client's, internal/schemagraph's and
// bundlebuild's, could drift apart, and a result be judged on other
// numbers than encoding/json decodes): scanJSON, now on jsonnum's
// Scanner, reports the same numbers and strings, with the same escaped
// flags, as the loop it replaced, on texts of JSON's bytes in random
// order (strings left open, a backslash last, numbers against letters),
// and stops where a callback says so.
func TestResultScanReadsTheNumbersAndStringsItReadBefore(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	alphabet := []byte(`{}[],: "\-+.eE0123456789truefalsnl` + "\t\n\x00\xff")
	texts := [][]byte{nil, []byte(`"`), []byte(`"\`), []byte(`-`), []byte(`{"a":[1.5e-3,"x\"y",-0,true]}`), []byte(`1e5"a`)}
	for range 5000 {
		b := make([]byte, rng.IntN(40))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		texts = append(texts, b)
	}
	read := func(scan func([]byte, func(int, int) bool, func([]byte, bool) bool), data []byte, stop int) string {
		var out bytes.Buffer
		n := 0
		scan(data, func(i, j int) bool {
			out.WriteString("N" + string(data[i:j]) + "|")
			n++
			return n != stop
		}, func(lit []byte, escaped bool) bool {
			out.WriteString("S" + string(lit))
			if escaped {
				out.WriteString("\\")
			}
			out.WriteString("|")
			n++
			return n != stop
		})
		return out.String()
	}
	for _, data := range texts {
		for _, stop := range []int{-1, 1, 2} {
			if got, want := read(scanJSON, data, stop), read(oldScanJSON, data, stop); got != want {
				t.Fatalf("%q (stop %d): %q, want %q", data, stop, got, want)
			}
		}
	}
}

package jsonnum

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// tokens is what a Scanner reads of data: each token as kind@i:j.
func tokens(data []byte) string {
	var b strings.Builder
	sc := NewScanner(data)
	for {
		kind, i, j := sc.Next()
		if kind == 0 {
			if i != len(data) || j != len(data) {
				fmt.Fprintf(&b, "end@%d:%d", i, j)
			}
			return b.String()
		}
		fmt.Fprintf(&b, "%c@%d:%d ", kind, i, j)
	}
}

// TestScannerReadsEachTokenByItsBytes: the one scanner client,
// internal/schemagraph and bundlebuild read a text's numbers, strings
// and structure with (docs/SPEC-DECISIONS.md JSON-13): strings by their
// quotes and escapes (one left open, or ended by a backslash, runs to
// the end), numbers as runs of 0-9 + - . e E from a digit or '-', the
// six structural bytes as themselves, every other byte skipped; the
// grammar is not checked.
func TestScannerReadsEachTokenByItsBytes(t *testing.T) {
	for _, c := range []struct{ data, want string }{
		{``, ``},
		{` true `, ``},
		{`{"a":[1.5e-3,-0]}`, `{@0:1 "@1:4 :@4:5 [@5:6 0@6:12 ,@12:13 0@13:15 ]@15:16 }@16:17 `},
		{`"a\"b" 12`, `"@0:6 0@7:9 `},
		{`"{[1,2]}"`, `"@0:9 `},
		{`"open`, `"@0:5 `},
		{`"ends\`, `"@0:6 `},
		{`"\\"1`, `"@0:4 0@4:5 `},
		{`1e5x-+.eE`, `0@0:3 0@4:9 `},
		{`nulltrue-1`, `0@8:10 `},
		{`+5`, `0@1:2 `},
	} {
		if got := tokens([]byte(c.data)); got != c.want {
			t.Errorf("%q: %q, want %q", c.data, got, c.want)
		}
	}
}

// oldStructureCounts is the loop bundlebuild/heapcharge.go's structure
// ran before it read with the Scanner, kept as the oracle: the bytes
// { [ , : outside strings, the numbers and their bytes, the nesting.
func oldStructureCounts(data []byte) [6]int {
	var objects, arrays, members, numbers, numberBytes, deepest int
	depth := 0
	for i := 0; i < len(data); i++ {
		switch data[i] {
		case '"':
			for i++; i < len(data) && data[i] != '"'; i++ {
				if data[i] == '\\' {
					i++
				}
			}
		case '{':
			objects++
			depth++
		case '[':
			arrays++
			depth++
		case '}', ']':
			depth--
		case ',', ':':
			members++
		case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
			j := i + 1
			for j < len(data) && strings.IndexByte("0123456789+-.eE", data[j]) >= 0 {
				j++
			}
			numbers++
			numberBytes += j - i
			i = j - 1
		}
		deepest = max(deepest, depth)
	}
	return [6]int{objects, arrays, members, numbers, numberBytes, deepest}
}

// TestScannerCountsWhatBundlebuildsLoopCounted (guard: the three copies
// of the scanner were one rule written three times): counted from the
// Scanner's tokens, as bundlebuild's structure now counts, a text's
// objects, arrays, members, numbers, number bytes and nesting are those
// the replaced loop counted, on texts of JSON's bytes in random order.
func TestScannerCountsWhatBundlebuildsLoopCounted(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 18))
	alphabet := []byte(`{}[],: "\-+.eE0123456789truefalsnl` + "\t\n\x00\xff")
	for range 20000 {
		data := make([]byte, rng.IntN(48))
		for i := range data {
			data[i] = alphabet[rng.IntN(len(alphabet))]
		}
		var got [6]int
		depth := 0
		sc := NewScanner(data)
		for kind, i, j := sc.Next(); kind != 0; kind, i, j = sc.Next() {
			switch kind {
			case '{':
				got[0]++
				depth++
			case '[':
				got[1]++
				depth++
			case '}', ']':
				depth--
			case ',', ':':
				got[2]++
			case TokenNumber:
				got[3]++
				got[4] += j - i
			}
			got[5] = max(got[5], depth)
		}
		if want := oldStructureCounts(data); got != want {
			t.Fatalf("%q: %v, want %v", data, got, want)
		}
	}
}

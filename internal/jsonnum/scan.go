package jsonnum

// The kinds of token Scanner.Next returns besides the bytes { } [ ] , :
// (each its own kind).
const (
	// TokenString is a string: its literal, quotes included; one left
	// open runs to the end of the text.
	TokenString byte = '"'
	// TokenNumber is a number: a run of the bytes 0-9 + - . e E that
	// begins with a digit or '-', not checked against the grammar.
	TokenNumber byte = '0'
)

// Scanner reads the tokens of a JSON text by their bytes, for the
// readers that count what a text holds before it is parsed (its numbers,
// its nesting, its members): client (a provider's result,
// docs/SPEC-DECISIONS.md JSON-9, JSON-10), internal/schemagraph (which
// path a schema document is decoded by, JSON-3) and bundlebuild (what a
// schema's parse is charged, BUILD-2, JSON-8), so that all three read
// the same numbers from the same bytes (JSON-13). It checks no grammar
// (the text need not be JSON: what is not, the parse refuses) and
// allocates nothing; each byte is read once.
type Scanner struct {
	data []byte
	i    int
}

// NewScanner returns a Scanner at the start of data.
func NewScanner(data []byte) Scanner {
	return Scanner{data: data}
}

// Next returns the next token: its kind (TokenString, TokenNumber, or
// one of the bytes { } [ ] , : itself) and its offsets in the text,
// [i, j); kind 0 at the end of the text. Every other byte (white space,
// the letters of true, false and null, anything else outside a string)
// is skipped.
func (s *Scanner) Next() (kind byte, i, j int) {
	data := s.data
	for i = s.i; i < len(data); i++ {
		switch c := data[i]; c {
		case '"':
			j = i + 1
			for j < len(data) && data[j] != '"' {
				if data[j] == '\\' {
					j++
				}
				j++
			}
			s.i = min(j+1, len(data))
			return TokenString, i, s.i
		case '{', '}', '[', ']', ',', ':':
			s.i = i + 1
			return c, i, s.i
		case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
			j = i + 1
			for j < len(data) && numberByte(data[j]) {
				j++
			}
			s.i = j
			return TokenNumber, i, j
		}
	}
	s.i = len(data)
	return 0, len(data), len(data)
}

// numberByte reports whether c may continue a number's run: 0-9 + - . e E.
func numberByte(c byte) bool {
	return isDigit(c) || c == '+' || c == '-' || c == '.' || c == 'e' || c == 'E'
}

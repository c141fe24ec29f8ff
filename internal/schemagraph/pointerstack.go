package schemagraph

import "strings"

// PointerStack is the JSON pointer of the value a depth-first walk is at,
// kept as a stack of escaped reference tokens, with the text of every
// pointer rendered from it so far, so that a walk that records pointers
// can bound what they take: its time and memory stay linear in the
// document however deep the pointers are. The zero value is the root.
type PointerStack struct {
	tokens []string // escaped tokens from the root to the value walked
	plen   int      // the length of tokens as a pointer
	bytes  int      // pointer text rendered so far
}

// Push appends a reference token, already escaped as the caller's pointer
// form requires (EscapeToken, or further for a URI fragment).
func (s *PointerStack) Push(escaped string) {
	s.tokens = append(s.tokens, escaped)
	s.plen += 1 + len(escaped)
}

// Pop takes the last token off.
func (s *PointerStack) Pop() {
	s.plen -= 1 + len(s.tokens[len(s.tokens)-1])
	s.tokens = s.tokens[:len(s.tokens)-1]
}

// Depth returns the number of tokens: 0 at the root.
func (s *PointerStack) Depth() int { return len(s.tokens) }

// Render returns the pointer of the value walked and counts its length
// against the text rendered so far; false, rendering and counting nothing,
// when that would pass max bytes.
func (s *PointerStack) Render(max int) (string, bool) {
	if s.bytes+s.plen > max {
		return "", false
	}
	s.bytes += s.plen
	var b strings.Builder
	b.Grow(s.plen)
	for _, t := range s.tokens {
		b.WriteByte('/')
		b.WriteString(t)
	}
	return b.String(), true
}

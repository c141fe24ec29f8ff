package amp

import (
	"strings"
	"testing"
)

// TestValidErrNameRefusesWhatCannotBePrinted: an error name read from a
// peer or a file is printed only when ValidErrName passes it, so a name
// carrying a terminal escape, a newline, a space, upper case, non-ASCII
// bytes, or more than 64 bytes must fail, and every name this project
// writes must pass.
func TestValidErrNameRefusesWhatCannotBePrinted(t *testing.T) {
	for _, c := range []struct {
		name string
		ok   bool
	}{
		{"hash_mismatch", true},
		{"e2", true},
		{"_", true},
		{strings.Repeat("a", 64), true},
		{CodeInvalidMessage.SnakeName(), true},
		{"", false},
		{strings.Repeat("a", 65), false},
		{"Hash_mismatch", false},
		{"hash-mismatch", false},
		{"hash mismatch", false},
		{"bad\nname", false},
		{"\x1b[31mred", false},
		{"caf\xc3\xa9", false},
		{"nul\x00", false},
	} {
		if got := ValidErrName(c.name); got != c.ok {
			t.Errorf("ValidErrName(%q) = %v, want %v", c.name, got, c.ok)
		}
	}
}

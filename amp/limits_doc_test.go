package amp

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestMessageLimitsAreDocumented: every cap a message is refused by (1001
// limit_exceeded) is named in docs/FORMAT.md beside the agent's other
// admission limits (moved there from docs/CLI.md), with the value the
// decoder applies: an array of 65,537 items was refused by a limit no
// document named.
func TestMessageLimitsAreDocumented(t *testing.T) {
	data, err := os.ReadFile("../docs/FORMAT.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := regexp.MustCompile(`\s+`).ReplaceAllString(string(data), " ")
	l := DefaultLimits()
	for _, want := range []string{
		"at most " + thousands(l.MaxItems) + " CBOR data items in all",
		"at most " + thousands(l.MaxArrayLen) + " items in one array",
		thousands(l.MaxMapPairs) + " pairs in one map",
		"nesting " + thousands(l.MaxDepth) + " deep",
	} {
		if !strings.Contains(doc, want) {
			t.Errorf("docs/FORMAT.md does not say %q", want)
		}
	}
}

// thousands writes n with commas between groups of three digits.
func thousands(n int) string {
	s := []byte(strconv.Itoa(n))
	var out []byte
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, c)
	}
	return string(out)
}

package mcpbridge

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/agent"
)

// docBlock returns the first ```json block after marker in docs/FORMAT.md.
func docBlock(t *testing.T, marker string) []byte {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("..", "docs", "FORMAT.md"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(doc)
	i := strings.Index(s, marker)
	if i < 0 {
		t.Fatalf("docs/FORMAT.md has no %q", marker)
	}
	s = s[i:]
	j := strings.Index(s, "```json\n")
	k := strings.Index(s[j+8:], "```")
	if j < 0 || k < 0 {
		t.Fatalf("no json block after %q", marker)
	}
	return []byte(s[j+8 : j+8+k])
}

// TestFormatDocToolExampleIsWhatIsListed: the annotated example of
// docs/FORMAT.md ("MCP tools") is the bridge's answer, member for member
// (a second implementation is written from that document).
func TestFormatDocToolExampleIsWhatIsListed(t *testing.T) {
	e := newEnv(t, newStoreFile(t), agent.Rules{{Caller: testPrincipal, Prefix: "*"}})
	cs, _ := connect(t, e, testPrincipal)
	got, err := json.Marshal(toolNames(t, cs)[testTool(t)])
	if err != nil {
		t.Fatal(err)
	}
	if want := docBlock(t, "#### Annotated example: a listed tool"); !jsonEqual(t, got, want) {
		t.Fatalf("docs/FORMAT.md's example differs from the listed tool:\n%s", got)
	}
}

// TestFormatDocTokenFileExampleParses: the token file example of
// docs/FORMAT.md is accepted as it is written.
func TestFormatDocTokenFileExampleParses(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "docs", "FORMAT.md"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(doc)
	i := strings.Index(s, "### MCP token file")
	if i < 0 {
		t.Fatal("no token file section")
	}
	var lines []string
	for _, l := range strings.Split(s[i:], "\n") {
		if strings.HasPrefix(l, "    ") {
			lines = append(lines, strings.TrimPrefix(l, "    "))
		}
	}
	toks, err := ParseTokenFile([]byte(strings.Join(lines, "\n")))
	if err != nil || len(toks) != 1 || toks[0].Principal != "did:web:ide.example.org" {
		t.Fatalf("%v %+v", err, toks)
	}
}

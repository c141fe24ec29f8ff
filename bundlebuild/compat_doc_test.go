package bundlebuild

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/capability"
)

// docBlock returns the text between two markers of docs/FORMAT.md, fences
// removed.
func docBlock(t *testing.T, name string) []byte {
	t.Helper()
	doc, err := os.ReadFile("../docs/FORMAT.md")
	if err != nil {
		t.Fatal(err)
	}
	begin, end := "<!-- "+name+":begin -->", "<!-- "+name+":end -->"
	a, b := bytes.Index(doc, []byte(begin)), bytes.Index(doc, []byte(end))
	if a < 0 || b < a {
		t.Fatalf("docs/FORMAT.md has no %s block", name)
	}
	block := strings.TrimSpace(string(doc[a+len(begin) : b]))
	block = strings.TrimPrefix(strings.TrimPrefix(block, "```jsonc"), "```json")
	block = strings.TrimSuffix(block, "```")
	// Annotations are "// ..." to the end of a line.
	var lines []string
	for _, l := range strings.Split(block, "\n") {
		if i := strings.Index(l, "  // "); i >= 0 {
			l = l[:i]
		}
		lines = append(lines, l)
	}
	return []byte(strings.Join(lines, "\n"))
}

// TestFormatDocCompatExample keeps the annotated example of docs/FORMAT.md
// ("Compatibility policy and signed claims") honest: building the
// translate sample with the policy shown gives exactly the annotated
// descriptor, claims and all.
func TestFormatDocCompatExample(t *testing.T) {
	src := filepath.Join("..", "testdata", "bundles", "translate")
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	cfg := docBlock(t, "compat-source-example")
	if err := os.WriteFile(filepath.Join(dst, "capabilities", "org.example.translate.text", "2.1.0", "capability.json"), cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := LoadSource(dst, SourceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got capability.Descriptor
	for _, c := range d.Capabilities {
		if c.Version.String() == "2.1.0" {
			got = c
		}
	}
	gotJSON, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	want, err := capability.DecodeDescriptorJSON(docBlock(t, "compat-descriptor-example"))
	if err != nil {
		t.Fatalf("the documented descriptor does not decode: %v", err)
	}
	wantJSON, _ := json.Marshal(want)
	if !bytes.Equal(gotJSON, wantJSON) {
		t.Fatalf("the docs/FORMAT.md compatibility example descriptor differs from what build produces:\n doc %s\nbuild %s", wantJSON, gotJSON)
	}
	if len(got.CompatClaims) == 0 {
		t.Fatal("the example shows no claim")
	}
}

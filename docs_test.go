package ampbundle

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The repository must stand alone: a clone has no team notes, so a comment
// or document that sends the reader to one leaves them with nothing.

// forbiddenRef matches references to documents outside the repository.
var forbiddenRef = regexp.MustCompile(`\.\./shared|/work/shared|\bFACTS\.md\b|\bSTYLE\.md\b|\bERRATA\b|\bDESIGN(\.md)?\b`)

// repoPath matches what looks like a path inside the repository: a name
// under a top-level directory whose last element has a dot or that ends in
// a slash ("docs/FORMAT.md", "testdata/vectors/*.json", "amp/"), or a bare
// Go or Markdown file name. A match that is part of a URL or a longer path
// is skipped by the caller.
var repoPath = regexp.MustCompile(`[A-Za-z0-9_.*-]+(?:/[A-Za-z0-9_.*-]+)*`)

// repoFiles lists the Go files, the Markdown documents and the text files
// under testdata that the checks read, relative to the module root.
func repoFiles(t *testing.T) (gofiles, docs, data []string) {
	t.Helper()
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			// Dot-directories and installed packages (npm's node_modules)
			// are not the project's own files.
			if p != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		switch {
		case strings.HasSuffix(p, ".go"):
			gofiles = append(gofiles, p)
		case strings.HasSuffix(p, ".md"):
			docs = append(docs, p)
		case strings.HasPrefix(p, "testdata"+string(filepath.Separator)) && (strings.HasSuffix(p, ".json") || strings.HasSuffix(p, ".txt")):
			data = append(data, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(gofiles) == 0 || len(docs) == 0 {
		t.Fatalf("found %d Go files and %d documents: the walk matched nothing", len(gofiles), len(docs))
	}
	return gofiles, docs, data
}

// topDirs is the set of the repository's top-level directories.
func topDirs(t *testing.T) map[string]bool {
	t.Helper()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	dirs := map[string]bool{}
	for _, e := range entries {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			dirs[e.Name()] = true
		}
	}
	return dirs
}

// missingFiles returns the repository paths that text mentions and that do
// not exist. A path under a top-level directory is looked up from the module
// root; a bare file name from dir, the module root and docs/. A glob must
// match at least one file.
func missingFiles(text, dir string, top map[string]bool) []string {
	var missing []string
	for _, loc := range repoPath.FindAllStringIndex(text, -1) {
		m := text[loc[0]:loc[1]]
		if loc[0] > 0 {
			if c := text[loc[0]-1]; c == '/' || c == '.' || c == ':' || c == '@' {
				continue // part of a URL, an absolute path or a longer name
			}
		}
		if loc[1] < len(text) && text[loc[1]] == '/' {
			m += "/"
		}
		m = strings.TrimRight(m, ".")
		first, _, nested := strings.Cut(m, "/")
		var candidates []string
		switch {
		case nested && top[first]:
			if last := m[strings.LastIndex(strings.TrimSuffix(m, "/"), "/")+1:]; !strings.HasSuffix(m, "/") && !strings.Contains(last, ".") {
				continue // prose such as "capability/type"
			}
			candidates = []string{m}
		case !nested && (strings.HasSuffix(m, ".go") || strings.HasSuffix(m, ".md")):
			if strings.HasPrefix(m, "*") || strings.HasPrefix(m, "_") {
				continue // a pattern such as *_test.go
			}
			candidates = []string{filepath.Join(dir, m), m, filepath.Join("docs", m)}
		default:
			continue
		}
		found := false
		for _, c := range candidates {
			if matches, _ := filepath.Glob(filepath.FromSlash(strings.TrimSuffix(c, "/"))); len(matches) > 0 {
				found = true
				break
			}
		}
		if !found {
			missing = append(missing, m)
		}
	}
	return missing
}

// TestCommentsCiteOnlyRepositoryFiles: a comment that sends the reader to a
// file the repository does not have (moved, renamed, or never in it) is a
// dead end; so is one that cites the team's notes.
func TestCommentsCiteOnlyRepositoryFiles(t *testing.T) {
	gofiles, _, _ := repoFiles(t)
	top := topDirs(t)
	fset := token.NewFileSet()
	comments := 0
	for _, p := range gofiles {
		f, err := parser.ParseFile(fset, p, nil, parser.ParseComments)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		for _, g := range f.Comments {
			comments++
			text := g.Text()
			pos := fset.Position(g.Pos())
			if ref := forbiddenRef.FindString(text); ref != "" {
				t.Errorf("%s:%d: comment cites %q, a document outside the repository", p, pos.Line, ref)
			}
			for _, m := range missingFiles(text, filepath.Dir(p), top) {
				t.Errorf("%s:%d: comment mentions %s, which the repository does not have", p, pos.Line, m)
			}
		}
	}
	if comments == 0 {
		t.Fatal("no comments found: the check checked nothing")
	}
}

// TestDocumentsCiteOnlyRepositoryFiles: the same for the README, docs/ and
// the notes inside testdata files.
func TestDocumentsCiteOnlyRepositoryFiles(t *testing.T) {
	_, docs, data := repoFiles(t)
	top := topDirs(t)
	sawReadme, sawDocs := false, false
	for _, p := range append(docs, data...) {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		sawReadme = sawReadme || p == "README.md"
		sawDocs = sawDocs || strings.HasPrefix(p, "docs"+string(filepath.Separator))
		for i, line := range strings.Split(text, "\n") {
			if ref := forbiddenRef.FindString(line); ref != "" {
				t.Errorf("%s:%d: cites %q, a document outside the repository", p, i+1, ref)
			}
			if !strings.HasSuffix(p, ".md") {
				continue
			}
			for _, m := range missingFiles(line, filepath.Dir(p), top) {
				t.Errorf("%s:%d: mentions %s, which the repository does not have", p, i+1, m)
			}
		}
	}
	if !sawReadme || !sawDocs {
		t.Fatalf("README.md seen: %v, docs/ seen: %v: the check missed them", sawReadme, sawDocs)
	}
}

// TestMissingFilesFindsDeadReferences makes sure the path check can fail.
func TestMissingFilesFindsDeadReferences(t *testing.T) {
	top := map[string]bool{"docs": true, "amp": true}
	tests := []struct {
		name, text string
		want       []string
	}{
		{"existing doc", "see docs/FORMAT.md §4", nil},
		{"missing doc", "see docs/NOPE.md", []string{"docs/NOPE.md"}},
		{"bare existing doc", "FORMAT.md says", nil},
		{"bare missing file", "see gone.go", []string{"gone.go"}},
		{"url is not a path", "https://example.org/docs/NOPE.md", nil},
		{"directory", "the amp/ package", nil},
		{"glob with matches", "docs/*.md", nil},
		{"glob without matches", "docs/*.nope", []string{"docs/*.nope"}},
		{"not a repository directory", "capabilities/x/input.schema.json", nil},
		{"prose with a slash", "by amp/type", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := missingFiles(tc.text, ".", top)
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("missingFiles(%q) = %v, want %v", tc.text, got, tc.want)
			}
		})
	}
	if !forbiddenRef.MatchString("see DESIGN §7") || !forbiddenRef.MatchString("../shared/spec/x") || forbiddenRef.MatchString("design") {
		t.Error("forbiddenRef does not match what it must")
	}
}

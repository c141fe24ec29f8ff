package ampbundle

import (
	"go/build"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

// modulePath is this module's import path (go.mod).
const modulePath = "github.com/ampbundle/ampbundle"

// archRow is one row of docs/ARCHITECTURE.md's package table.
type archRow struct {
	owns    string
	imports []string // module-relative package directories, "." for the root
}

// backticked matches a `code span`.
var backticked = regexp.MustCompile("`([^`]+)`")

// archTable reads the package table of doc (docs/ARCHITECTURE.md,
// "Packages and what each owns"): a Markdown table whose first cell names a
// package directory and whose last lists, backticked, the module's packages
// it imports ("nothing" when none).
func archTable(t *testing.T, doc string) map[string]archRow {
	t.Helper()
	_, section, ok := strings.Cut(doc, "\n## Packages and what each owns\n")
	if !ok {
		t.Fatal(`docs/ARCHITECTURE.md has no section "Packages and what each owns"`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	rows := map[string]archRow{}
	for _, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		if len(cells) != 3 {
			t.Fatalf("table row with %d cells, want 3: %q", len(cells), line)
		}
		m := backticked.FindStringSubmatch(cells[0])
		if m == nil {
			t.Fatalf("table row names no package: %q", line)
		}
		row := archRow{owns: cells[1], imports: []string{}}
		if strings.TrimSpace(cells[2]) != "nothing" {
			for _, im := range backticked.FindAllStringSubmatch(cells[2], -1) {
				row.imports = append(row.imports, im[1])
			}
			if len(row.imports) == 0 {
				t.Fatalf("row %s lists no import and does not say nothing: %q", m[1], cells[2])
			}
		}
		if _, dup := rows[m[1]]; dup {
			t.Fatalf("package %s has two rows", m[1])
		}
		rows[m[1]] = row
	}
	if len(rows) == 0 {
		t.Fatal("docs/ARCHITECTURE.md's package table has no rows")
	}
	return rows
}

// moduleImports returns, for every package directory of the module (".",
// "agent", "transport/amphttp", ...), the module's packages its non-test
// files import for the current platform, sorted. It reads import clauses
// only (go/build), so a package that does not compile still shows its
// imports.
func moduleImports(t *testing.T) map[string][]string {
	t.Helper()
	pkgs := map[string][]string{}
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		name := d.Name()
		if p != "." && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "vendor") {
			return filepath.SkipDir
		}
		bp, err := build.ImportDir(p, 0)
		if err != nil {
			if _, none := err.(*build.NoGoError); none {
				return nil
			}
			return err
		}
		dir := filepath.ToSlash(p)
		ours := []string{}
		for _, im := range bp.Imports {
			switch {
			case im == modulePath:
				ours = append(ours, ".")
			case strings.HasPrefix(im, modulePath+"/"):
				ours = append(ours, strings.TrimPrefix(im, modulePath+"/"))
			}
		}
		sort.Strings(ours)
		pkgs[dir] = ours
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return pkgs
}

// TestArchitectureTableMatchesImports keeps docs/ARCHITECTURE.md's package
// table true (threat: a reader, or a reviewer judging a change, trusts a
// one-way dependency the code no longer has, e.g. that a caller links no
// store or a binding imports only amp): every package of the module has a
// row, every row is a package, and each row lists exactly the module's
// packages the package imports. A new import, a new package, or a row left
// behind by a move fails here until the table says so.
func TestArchitectureTableMatchesImports(t *testing.T) {
	doc, err := os.ReadFile("docs/ARCHITECTURE.md")
	if err != nil {
		t.Fatal(err)
	}
	table := archTable(t, string(doc))
	code := moduleImports(t)
	for dir, imports := range code {
		row, ok := table[dir]
		if !ok {
			t.Errorf("package %s has no row in docs/ARCHITECTURE.md (it imports %v of ours)", dir, imports)
			continue
		}
		documented := slices.Sorted(slices.Values(row.imports))
		for _, im := range imports {
			if !slices.Contains(documented, im) {
				t.Errorf("%s imports %s; docs/ARCHITECTURE.md's row does not allow it", dir, im)
			}
		}
		for _, im := range documented {
			if !slices.Contains(imports, im) {
				t.Errorf("docs/ARCHITECTURE.md says %s imports %s; it does not", dir, im)
			}
		}
	}
	for dir := range table {
		if _, ok := code[dir]; !ok {
			t.Errorf("docs/ARCHITECTURE.md has a row for %s, which is not a package of the module", dir)
		}
	}
}

// referenceCommand matches a command heading of a generated reference page
// (docs/reference/ampbundle.md, docs/reference/ampagent.md): "## name".
var referenceCommand = regexp.MustCompile(`(?m)^## ([a-z][a-z0-9-]*)$`)

// TestArchitectureNamesEveryCommand: the row of each tool in
// docs/ARCHITECTURE.md names each of its commands as listed by the
// generated flag reference (threat: a new command lands with no place in
// the map of the code, as mirror's serve and sync once did).
func TestArchitectureNamesEveryCommand(t *testing.T) {
	doc, err := os.ReadFile("docs/ARCHITECTURE.md")
	if err != nil {
		t.Fatal(err)
	}
	table := archTable(t, string(doc))
	for _, tool := range []string{"ampbundle", "ampagent"} {
		ref, err := os.ReadFile(filepath.Join("docs", "reference", tool+".md"))
		if err != nil {
			t.Fatal(err)
		}
		row, ok := table["cmd/"+tool]
		if !ok {
			t.Fatalf("docs/ARCHITECTURE.md has no row for cmd/%s", tool)
		}
		named := map[string]bool{}
		for _, m := range backticked.FindAllStringSubmatch(row.owns, -1) {
			named[m[1]] = true
		}
		cmds := referenceCommand.FindAllStringSubmatch(string(ref), -1)
		if len(cmds) < 5 {
			t.Fatalf("docs/reference/%s.md lists %d commands", tool, len(cmds))
		}
		for _, m := range cmds {
			if !named[m[1]] {
				t.Errorf("docs/ARCHITECTURE.md's row for cmd/%s does not name its command %q", tool, m[1])
			}
		}
	}
}

// staticcheckPin matches the pinned staticcheck command.
var staticcheckPin = regexp.MustCompile(`go run honnef\.co/go/tools/cmd/staticcheck@(v[0-9]+\.[0-9]+\.[0-9]+) \./\.\.\.`)

// TestStaticcheckPinnedOnceForCIAndContributors: .ci/run runs staticcheck
// at a pinned version, and CONTRIBUTING.md tells contributors the same one
// (threat: a contributor's clean run passes a check CI fails, or CI
// silently stops running it).
func TestStaticcheckPinnedOnceForCIAndContributors(t *testing.T) {
	var pins []string
	for _, name := range []string{".ci/run", "CONTRIBUTING.md"} {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		m := staticcheckPin.FindAllSubmatch(data, -1)
		if len(m) != 1 {
			t.Fatalf("%s runs the pinned staticcheck %d times, want once", name, len(m))
		}
		pins = append(pins, string(m[0][1]))
	}
	if pins[0] != pins[1] {
		t.Fatalf(".ci/run pins staticcheck %s, CONTRIBUTING.md %s", pins[0], pins[1])
	}
}

// testOnlyPackages are the module's packages that only tests may import:
// helpers that read test data, fail a testing.TB, hold keys no one may
// trust, or measure what a test's work allocates.
var testOnlyPackages = []string{"internal/cliutil/clitest", "internal/termtest", "internal/testalloc", "internal/testkeys"}

// TestTestOnlyPackagesAreImportedByTestsOnly (threat: a test helper, such
// as internal/testkeys with its keys of small order, reaches a binary and
// its data or its testing import with it): no non-test file of another
// package imports a package of testOnlyPackages, and each is a package of
// the module with a row in docs/ARCHITECTURE.md.
func TestTestOnlyPackagesAreImportedByTestsOnly(t *testing.T) {
	doc, err := os.ReadFile("docs/ARCHITECTURE.md")
	if err != nil {
		t.Fatal(err)
	}
	table := archTable(t, string(doc))
	code := moduleImports(t)
	for _, p := range testOnlyPackages {
		if _, ok := code[p]; !ok {
			t.Errorf("test-only package %s is not a package of the module", p)
		}
		if _, ok := table[p]; !ok {
			t.Errorf("test-only package %s has no row in docs/ARCHITECTURE.md", p)
		}
	}
	for dir, imports := range code {
		if slices.Contains(testOnlyPackages, dir) {
			continue
		}
		for _, im := range imports {
			if slices.Contains(testOnlyPackages, im) {
				t.Errorf("%s imports the test-only package %s from a non-test file", dir, im)
			}
		}
	}
}

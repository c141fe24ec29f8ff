package ampbundle

import (
	"cmp"
	"errors"
	"fmt"
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"go/types"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// globalWritesAllowed names the package-level variables of the module's
// non-test files that its tests may assign, each with why it must be
// package state. A limit that a test lowers is carried by the instance
// under test instead (a field set by the constructor, or an unexported
// option), so that two tests never share it and no test has to put it
// back.
var globalWritesAllowed = map[string]string{
	"bundlebuild.softLimit": "the process's soft memory limit " +
		"(runtime/debug.SetMemoryLimit) is one value for the whole process, " +
		"so the builds that share it are package state by necessity " +
		"(bundlebuild/memlimit.go, docs/SPEC-DECISIONS.md BUILD-10)",
}

// TestNoPackageVariableIsAssignedByTests: a package-level variable that
// tests assign (to lower a limit, most often) is state every test of the
// package shares: a test that lowers it races with every other test run
// in parallel, and one that fails before putting it back leaves the
// others to run with its value. Every package-level variable of a non-test
// file that a test file assigns, at any depth (=, op=, ++ and --, or a
// field, element or pointee of it), is refused unless globalWritesAllowed
// names it. A fault or clock seam is carried by the call or the instance
// too (docs/SPEC-DECISIONS.md STYLE-1, STYLE-2).
func TestNoPackageVariableIsAssignedByTests(t *testing.T) {
	found, declared, err := testWritesToPackageVars(".", modulePath)
	if err != nil {
		t.Fatal(err)
	}
	if len(declared) == 0 {
		t.Fatal("no package-level variables found: the check checked nothing")
	}
	for _, v := range slices.Sorted(maps.Keys(found)) {
		if _, allowed := globalWritesAllowed[v]; allowed {
			continue
		}
		t.Errorf("%s: package variable %s is assigned by tests at %s; carry the value on the instance under test instead",
			declared[v], v, strings.Join(found[v], ", "))
	}
	for v := range globalWritesAllowed {
		if _, ok := declared[v]; !ok {
			t.Errorf("globalWritesAllowed names %s, which no non-test file declares", v)
		}
	}
}

// TestPackageVariableWritesAreFoundAtAnyDepth: the check above finds each
// kind of write to a package-level variable, in the package's own tests
// and through an import, and nothing that only looks like one; a test
// file or a variable of one system only (Windows, darwin) is checked too,
// and a write every system builds is counted once.
func TestPackageVariableWritesAreFoundAtAnyDepth(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{
		"go.mod": "module example.com/m\n\ngo 1.26\n",
		"p/p.go": `package p

var limit = 10
var counter int
var cfg struct{ n int }
var table = map[string]int{}
var ptr = new(int)
var readOnly = 3
var shadowed = 1
var param = 2

// Exported is assigned from another package's tests.
var Exported = 1

func use() int { limit = 11; return limit + readOnly + shadowed + param }
`,
		"p/p_test.go": `package p

import "testing"

var testOwn = 1

func TestA(t *testing.T) {
	testOwn = 2
	_ = readOnly
	shadowed := 0
	shadowed = 5
	_ = shadowed
	func() {
		if true {
			for range 1 {
				limit = 1
			}
		}
	}()
	counter++
	cfg.n = 3
	table["k"] = 1
	*ptr = 4
}

func helper(param int) { param = 3; _ = param }
`,
		"p/p_windows_test.go": `package p

import "testing"

func TestW(t *testing.T) { counter = 2 }
`,
		"p/sys_darwin.go": `package p

var darwinOnly = 1
`,
		"p/sys_darwin_test.go": `package p

import "testing"

func TestD(t *testing.T) { darwinOnly++ }
`,
		"p/x_test.go": `package p_test

import (
	"testing"

	"example.com/m/p"
)

func TestB(t *testing.T) { p.Exported += 1 }
`,
		"q/q_test.go": `package q

import (
	"testing"

	alias "example.com/m/p"
)

func TestC(t *testing.T) { defer func() { alias.Exported-- }() }
`,
	}
	for name, src := range files {
		path := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	found, declared, err := testWritesToPackageVars(root, "example.com/m")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for v, at := range found {
		got[v] = len(at)
	}
	want := map[string]int{"p.limit": 1, "p.counter": 2, "p.cfg": 1, "p.table": 1, "p.ptr": 1, "p.Exported": 2, "p.darwinOnly": 1}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("writes found %v, want %v", got, want)
	}
	if len(declared) != 10 {
		t.Errorf("%d package variables declared outside tests, want 10: %v", len(declared), declared)
	}
}

// varsOfPackage is what one directory's package holds, for
// testWritesToPackageVars.
type varsOfPackage struct {
	rel   string                // module-relative directory, "." for the root
	vars  map[types.Object]bool // package-level variables of non-test files
	named map[string]string     // their names, to where each is declared
	tests []*ast.File           // its test files, both packages
	info  map[*ast.File]*types.Info
}

// checkedSystems are the systems whose files testWritesToPackageVars
// reads: a test file or a variable of one system only (_windows_test.go,
// //go:build darwin) is checked on its own system's build.
var checkedSystems = []string{"linux", "darwin", "windows"}

// testWritesToPackageVars lists, under the module rooted at root whose
// path is module, each package-level variable of a non-test file that a
// test file writes, on any of checkedSystems: found maps "dir.name" to
// the positions of the writes, declared maps every such variable to where
// it is declared. The files are type-checked without their imports: only
// which declaration each identifier names is needed, and that the syntax
// alone decides.
func testWritesToPackageVars(root, module string) (found map[string][]string, declared map[string]string, err error) {
	fset := token.NewFileSet()
	at := map[string]map[string]token.Position{}
	declared = map[string]string{}
	for _, goos := range checkedSystems {
		ctxt := build.Default
		ctxt.GOOS = goos
		if err := writesOnSystem(&ctxt, fset, root, module, at, declared); err != nil {
			return nil, nil, err
		}
	}
	found = map[string][]string{}
	for v, byPos := range at {
		ps := slices.Collect(maps.Values(byPos))
		slices.SortFunc(ps, func(a, b token.Position) int {
			return cmp.Or(strings.Compare(a.Filename, b.Filename), a.Line-b.Line, a.Column-b.Column)
		})
		for _, p := range ps {
			found[v] = append(found[v], p.String())
		}
	}
	return found, declared, nil
}

// writesOnSystem adds to at ("dir.name" to its writes, each once by
// position) and declared what testWritesToPackageVars finds in the files
// ctxt builds.
func writesOnSystem(ctxt *build.Context, fset *token.FileSet, root, module string, at map[string]map[string]token.Position, declared map[string]string) error {
	byPath := map[string]*varsOfPackage{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		name := d.Name()
		if p != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "node_modules") {
			return filepath.SkipDir
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		path := module
		if rel != "." {
			path += "/" + rel
		}
		pkg, err := loadVarsOfPackage(ctxt, fset, p, rel, path)
		if pkg == nil || err != nil {
			return err
		}
		byPath[path] = pkg
		return nil
	})
	if err != nil {
		return err
	}
	for _, pkg := range byPath {
		for name, where := range pkg.named {
			declared[varKey(pkg.rel, name)] = where
		}
		for _, f := range pkg.tests {
			for _, w := range writesIn(f, pkg.info[f]) {
				v := resolveWrite(w, pkg, byPath)
				if v == "" {
					continue
				}
				if at[v] == nil {
					at[v] = map[string]token.Position{}
				}
				pos := fset.Position(w.at)
				at[v][pos.String()] = pos
			}
		}
	}
	return nil
}

// loadVarsOfPackage parses and type-checks the package in dir (nil when it
// holds none) as ctxt builds it: its non-test and test files together,
// its external test files apart.
func loadVarsOfPackage(ctxt *build.Context, fset *token.FileSet, dir, rel, path string) (*varsOfPackage, error) {
	bp, err := ctxt.ImportDir(dir, 0)
	if errors.As(err, new(*build.NoGoError)) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	parse := func(names []string) ([]*ast.File, error) {
		var fs []*ast.File
		for _, n := range names {
			f, err := parser.ParseFile(fset, filepath.Join(dir, n), nil, parser.SkipObjectResolution)
			if err != nil {
				return nil, err
			}
			fs = append(fs, f)
		}
		return fs, nil
	}
	src, err := parse(bp.GoFiles)
	if err != nil {
		return nil, err
	}
	inTests, err := parse(bp.TestGoFiles)
	if err != nil {
		return nil, err
	}
	xTests, err := parse(bp.XTestGoFiles)
	if err != nil {
		return nil, err
	}
	pkg := &varsOfPackage{rel: rel, vars: map[types.Object]bool{}, named: map[string]string{}, info: map[*ast.File]*types.Info{}}
	info := typeCheck(fset, path, append(slices.Clone(src), inTests...))
	nonTest := map[*token.File]bool{}
	for _, f := range src {
		nonTest[fset.File(f.Pos())] = true
	}
	for id, obj := range info.Defs {
		if v, ok := obj.(*types.Var); ok && v.Parent() == v.Pkg().Scope() && nonTest[fset.File(id.Pos())] {
			pkg.vars[v] = true
			pkg.named[v.Name()] = filepath.ToSlash(filepath.Join(rel, filepath.Base(fset.Position(id.Pos()).Filename)))
		}
	}
	for _, f := range inTests {
		pkg.tests, pkg.info[f] = append(pkg.tests, f), info
	}
	if len(xTests) > 0 {
		xinfo := typeCheck(fset, path+"_test", xTests)
		for _, f := range xTests {
			pkg.tests, pkg.info[f] = append(pkg.tests, f), xinfo
		}
	}
	return pkg, nil
}

// noImports imports nothing: the checker stands a placeholder package in
// for each import, which still says which package a qualifier names.
type noImports struct{}

func (noImports) Import(path string) (*types.Package, error) {
	return nil, fmt.Errorf("%s: not loaded", path)
}

// typeCheck resolves the identifiers of files, one package; the errors that
// the missing imports cause are expected and ignored.
func typeCheck(fset *token.FileSet, path string, files []*ast.File) *types.Info {
	info := &types.Info{Defs: map[*ast.Ident]types.Object{}, Uses: map[*ast.Ident]types.Object{}}
	conf := types.Config{Importer: noImports{}, Error: func(error) {}}
	_, _ = conf.Check(path, fset, files, info)
	return info
}

// write is one write found in a test file: the variable it lands in, or
// the package and name of a qualified one (pkg.Name).
type write struct {
	at        token.Pos
	obj       types.Object
	qualifier string
	name      string
}

// writesIn lists the writes of f: the roots of the left-hand sides of its
// assignments (=, op=) and of its ++ and -- statements, at any depth.
// A := declares, so it writes no package-level variable.
func writesIn(f *ast.File, info *types.Info) []write {
	var ws []write
	add := func(lhs ast.Expr) {
		if w, ok := writeRoot(lhs, info); ok {
			ws = append(ws, w)
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.AssignStmt:
			if n.Tok != token.DEFINE {
				for _, lhs := range n.Lhs {
					add(lhs)
				}
			}
		case *ast.IncDecStmt:
			add(n.X)
		}
		return true
	})
	return ws
}

// writeRoot is the variable a write to e lands in: e itself, or the
// variable whose field, element or pointee e is.
func writeRoot(e ast.Expr, info *types.Info) (write, bool) {
	for {
		switch x := e.(type) {
		case *ast.ParenExpr:
			e = x.X
		case *ast.StarExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.SelectorExpr:
			if id, ok := x.X.(*ast.Ident); ok {
				if pn, ok := info.Uses[id].(*types.PkgName); ok {
					return write{at: x.Pos(), qualifier: pn.Imported().Path(), name: x.Sel.Name}, true
				}
			}
			e = x.X
		case *ast.Ident:
			obj := info.Uses[x]
			return write{at: x.Pos(), obj: obj}, obj != nil
		default:
			return write{}, false
		}
	}
}

// resolveWrite names the package-level variable of a non-test file that w
// lands in ("dir.name"), or "" when it lands elsewhere.
func resolveWrite(w write, pkg *varsOfPackage, byPath map[string]*varsOfPackage) string {
	if w.qualifier == "" {
		if pkg.vars[w.obj] {
			return varKey(pkg.rel, w.obj.Name())
		}
		return ""
	}
	if other, ok := byPath[w.qualifier]; ok {
		if _, ok := other.named[w.name]; ok {
			return varKey(other.rel, w.name)
		}
	}
	return ""
}

// varKey names the variable name of the package in the module-relative
// directory rel: "dir.name", or the bare name in the root package.
func varKey(rel, name string) string {
	if rel == "." {
		return name
	}
	return rel + "." + name
}

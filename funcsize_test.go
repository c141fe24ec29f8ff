package ampbundle

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// Bounds on the functions outside tests: a function longer than
// maxFuncLines, or with more than maxCyclomatic independent paths, is more
// than a reviewer can hold in mind at once, and the attacks a review misses
// hide in it.
const (
	maxFuncLines  = 120
	maxCyclomatic = 40
)

// cyclomatic is the cyclomatic complexity of fn as gocyclo counts it: one,
// plus one for each if, for and range statement, each case of a switch or
// select other than the default, and each && and ||. Function literals
// inside fn count towards fn, as gocyclo counts them.
func cyclomatic(fn ast.Node) int {
	n := 1
	ast.Inspect(fn, func(node ast.Node) bool {
		switch node := node.(type) {
		case *ast.IfStmt, *ast.ForStmt, *ast.RangeStmt:
			n++
		case *ast.CaseClause:
			if node.List != nil {
				n++
			}
		case *ast.CommClause:
			if node.Comm != nil {
				n++
			}
		case *ast.BinaryExpr:
			if node.Op == token.LAND || node.Op == token.LOR {
				n++
			}
		}
		return true
	})
	return n
}

// TestNoFunctionTooLongOrBranchyToReview: every function and method
// outside tests stays within maxFuncLines lines and maxCyclomatic paths.
func TestNoFunctionTooLongOrBranchyToReview(t *testing.T) {
	gofiles, _, _ := repoFiles(t)
	fset := token.NewFileSet()
	funcs := 0
	for _, p := range gofiles {
		if strings.HasSuffix(p, "_test.go") || strings.Contains(filepath.ToSlash(p), "testdata/") {
			continue
		}
		f, err := parser.ParseFile(fset, p, nil, 0)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			funcs++
			start := fset.Position(fd.Pos()).Line
			lines := fset.Position(fd.End()).Line - start + 1
			if lines > maxFuncLines {
				t.Errorf("%s:%d: %s is %d lines long (at most %d)", p, start, fd.Name.Name, lines, maxFuncLines)
			}
			if c := cyclomatic(fd); c > maxCyclomatic {
				t.Errorf("%s:%d: %s has cyclomatic complexity %d (at most %d)", p, start, fd.Name.Name, c, maxCyclomatic)
			}
		}
	}
	if funcs == 0 {
		t.Fatal("no functions found: the check checked nothing")
	}
}

// TestCyclomaticCountsEveryBranch: the count the bound above relies on
// counts each kind of branch once, and nothing else.
func TestCyclomaticCountsEveryBranch(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       int
	}{
		{"straight line", `x := 1; _ = x`, 1},
		{"if with else", `if a { } else { }`, 2},
		{"for and range", `for i := 0; i < 3; i++ { }; for range xs { }`, 3},
		{"switch cases without default", `switch a { case 1: case 2, 3: default: }`, 3},
		{"select without default", `select { case <-c: case c <- 1: default: }`, 3},
		{"and and or", `_ = a && b || c`, 3},
		{"function literal counts", `f := func() { if a { } }; f()`, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := "package p\nfunc f() {\n" + tc.body + "\n}\n"
			f, err := parser.ParseFile(token.NewFileSet(), "p.go", src, 0)
			if err != nil {
				t.Fatal(err)
			}
			if got := cyclomatic(f.Decls[0]); got != tc.want {
				t.Errorf("cyclomatic = %d, want %d", got, tc.want)
			}
		})
	}
}

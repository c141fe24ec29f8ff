package jsonnum

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// peerNumberReaders are the packages that read numbers a peer wrote: an
// invocation's params and a handler's result (internal/offlineschema),
// an MCP client's arguments (mcpbridge, through internal/offlineschema),
// a publisher's schema documents (internal/schemagraph, compat), signed
// documents and cards (internal/jcs), contract files (internal/strictjson),
// a provider's result and the caller's params (client), descriptor JSON
// (capability).
var peerNumberReaders = []string{"../jcs", "../offlineschema", "../schemagraph", "../strictjson", "../../compat", "../../mcpbridge", "../../client", "../../capability"}

// TestReadersOfPeerNumbersRoundOnlyThroughJsonnum: strconv.ParseFloat
// rounds a subnormal or a long number near a rounding boundary in 20 to
// 110 µs, a thousand times a plain number, and misreads one of more than
// 800 digits before its point (docs/SPEC-DECISIONS.md AGH-20, AGH-21).
// internal/offlineschema called it twice per number of an MCP tools/call's
// arguments (262,143 subnormals, 1.8 MB: 4.7 s of CPU), and
// internal/schemagraph once per number of a schema document (4 MiB of
// subnormals: 13.8 s per SchemaID; docs/SPEC-DECISIONS.md JSON-3). No
// non-test file of a reader of peer numbers names it: each takes its
// double from ParseFloat here, which leaves to strconv only the numbers
// it rounds fast.
func TestReadersOfPeerNumbersRoundOnlyThroughJsonnum(t *testing.T) {
	fset := token.NewFileSet()
	var found []string
	for _, dir := range peerNumberReaders {
		names, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil || len(names) == 0 {
			t.Fatalf("%s: no Go files (%v)", dir, err)
		}
		for _, name := range names {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			src, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			f, err := parser.ParseFile(fset, name, src, 0)
			if err != nil {
				t.Fatal(err)
			}
			ast.Inspect(f, func(n ast.Node) bool {
				sel, ok := n.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				if x, ok := sel.X.(*ast.Ident); ok && x.Name == "strconv" && (sel.Sel.Name == "ParseFloat" || sel.Sel.Name == "ParseComplex") {
					found = append(found, fset.Position(sel.Pos()).String())
				}
				return true
			})
		}
	}
	if len(found) != 0 {
		t.Errorf("%d uses of strconv's float parsing in readers of peer numbers (round through jsonnum.ParseFloat):\n%s", len(found), strings.Join(found, "\n"))
	}
}

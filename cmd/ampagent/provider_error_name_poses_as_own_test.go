package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
)

// ownNameSources are the packages whose error names are this program's
// own findings when invoke or query reports them (relative to this
// directory); lib: every name they give (ErrName constants, amp.Named,
// Failf, amp.ErrName, an error document's Code); otherwise (this program,
// which also runs the provider side) only Failf, ErrName constants and
// conversions, and error documents, not amp.Named (serve's handler_failed
// and invalid_result are a provider's names).
var ownNameSources = []struct {
	dir string
	lib bool
}{
	{".", false},
	{"../../internal/cliutil", true},
	{"../../keyfile", true},
	{"../../client", true},
	{"../../transport", true},
	{"../../transport/amphttp", true},
	{"../../transport/ampstcp", true},
	{"../../amp", true},
	{"../../capability", true},
}

var snakeName = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
var errConstName = regexp.MustCompile(`^[Ee]rr[A-Z]`)

// sourceErrorNames reads the non-test Go files of dir and returns the
// error names they give, each with where it is.
func sourceErrorNames(t *testing.T, dir string, lib bool) map[string]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no Go files in %s: %v", dir, err)
	}
	names := map[string]string{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		fset := token.NewFileSet()
		af, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		add := func(e ast.Expr) {
			bl, ok := e.(*ast.BasicLit)
			if !ok || bl.Kind != token.STRING {
				return
			}
			if s, err := strconv.Unquote(bl.Value); err == nil && snakeName.MatchString(s) {
				names[s] = fset.Position(bl.Pos()).String()
			}
		}
		last := func(e ast.Expr) string {
			switch v := e.(type) {
			case *ast.Ident:
				return v.Name
			case *ast.SelectorExpr:
				return v.Sel.Name
			}
			return ""
		}
		ast.Inspect(af, func(n ast.Node) bool {
			switch v := n.(type) {
			case *ast.ValueSpec:
				typed := v.Type != nil && last(v.Type) == "ErrName"
				for i, val := range v.Values {
					if typed || i < len(v.Names) && errConstName.MatchString(v.Names[i].Name) {
						add(val)
					}
				}
			case *ast.CallExpr:
				switch last(v.Fun) {
				case "ErrName", "Failf", "fail":
					if len(v.Args) > 0 {
						add(v.Args[0])
					}
				case "Named":
					if lib && len(v.Args) > 1 {
						add(v.Args[1])
					}
				}
			case *ast.CompositeLit:
				if t := last(v.Type); t == "ErrorBody" || t == "Error" {
					for _, el := range v.Elts {
						if kv, ok := el.(*ast.KeyValueExpr); ok && (last(kv.Key) == "Code" || last(kv.Key) == "Name") {
							add(kv.Value)
						}
					}
				}
			}
			return true
		})
	}
	return names
}

// TestProviderErrorNameCannotPoseAsOwnName: a hostile agent answers
// CAP_INVOKE with a signed CAP_RESULT error whose name is one this program
// or the packages it runs on give their own findings: "key_error" or
// "key_unreadable" (--key did not load), "tls_config" (--tls-ca),
// "handshake_refused" or "going_away" (the AMPS/TCP client's refusals),
// "invalid_signature" (the reply did not verify), ... The --json error
// code, and a script's branch on it, would say the caller's setup is
// broken when the provider merely refused. Every such name, read from the
// sources so that a new one cannot be missed, must move to the details
// (CLI-25), while the names docs/CLI.md §3.6 says a provider keeps stay.
func TestProviderErrorNameCannotPoseAsOwnName(t *testing.T) {
	found := map[string]string{}
	for _, s := range ownNameSources {
		for n, at := range sourceErrorNames(t, s.dir, s.lib) {
			found[n] = at
		}
	}
	// The reader finds what it must: the names a review found kept.
	for _, n := range []string{
		"usage", "wrong_sender", "unsigned_refusal", "key_error", "key_unreadable",
		"empty_passphrase", "passphrase_mismatch", "tls_config", "invalid_ca",
		"handshake_refused", "invalid_handshake", "going_away", "protocol_violation",
		"stream_incomplete", "invalid_did_document", "plain_remote", "invalid_signature",
		string(errUnsafePlainHTTP),
	} {
		if _, ok := found[n]; !ok {
			t.Errorf("the source reader did not find %q: it no longer reads what the packages name", n)
		}
	}
	var missing []string
	for n, at := range found {
		if providerNameKept(amp.ErrName(n), amp.CodeBadRequest) {
			missing = append(missing, n+" ("+at+")")
		}
	}
	sort.Strings(missing)
	for _, m := range missing {
		t.Errorf("a provider's CAP_RESULT error named %s keeps that name as the CLI's error code: add it to ownErrorNames", m)
	}
	// A provider's own names (docs/CLI.md §3.6) are not taken for the CLI's.
	for _, c := range []struct {
		name string
		code amp.Code
	}{
		{"handler_failed", amp.CodeInternalError}, {"invalid_result", amp.CodeInternalError},
		{"result_too_large", amp.CodeInternalError}, {"outcome_unknown", amp.CodeInternalError},
		{"timeout", amp.CodeTimeout},
	} {
		if !providerNameKept(amp.ErrName(c.name), c.code) {
			t.Errorf("the provider's own name %q (%d) is taken for one of the CLI's", c.name, c.code)
		}
	}
}

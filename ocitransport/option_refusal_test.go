package ocitransport

import (
	"context"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
)

// TestLibraryRefusalsNameTheirOptionNeverACLIFlag: the failure. The
// library's refusals that a field of Options governs named ampbundle's
// CLI flags (--plain-http-host, --allow-redirect, --allow-auth-host,
// --max-layer-size, --plain-http), which an embedder's users do not
// have: an embedder told its user to pass a flag of another program.
// Each now names the Options field and carries an OptionHint (the field,
// the host refused, the refusal without the remedy), from which the CLI
// names its flag; the error name is unchanged (docs/SPEC-DECISIONS.md
// OCI-25).
func TestLibraryRefusalsNameTheirOptionNeverACLIFlag(t *testing.T) {
	ctx := context.Background()
	plain := httptest.NewServer(http.NotFoundHandler())
	defer plain.Close()
	plainHost := strings.TrimPrefix(plain.URL, "http://")
	_, port, _ := strings.Cut(plainHost, ":")
	redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://localhost:"+port+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	defer redirect.Close()
	resolve := func(host string, o Options) error {
		e, err := Open(ctx, Location{Kind: KindRegistry, Registry: host, Repository: "amp/x"}, o, ReadOnly)
		if err != nil {
			return err
		}
		defer e.Close()
		_, err = e.Resolve(ctx, "v1")
		return err
	}
	for _, tc := range []struct {
		name  string
		err   func() error
		want  amp.ErrName
		field string
		host  string
	}{
		{"plain HTTP to a host not loopback", func() error {
			return resolve("registry.invalid:5000", Options{PlainHTTP: true})
		}, ErrPlainHTTP, OptionPlainHTTPHosts, "registry.invalid:5000"},
		{"a redirect to a host not allowed", func() error {
			return resolve(strings.TrimPrefix(redirect.URL, "http://"), Options{PlainHTTP: true})
		}, ErrRedirect, OptionAllowRedirectHosts, "localhost"},
		{"a registry answering https in plain HTTP", func() error {
			return resolve(plainHost, Options{})
		}, ErrRegistry, OptionPlainHTTP, ""},
		{"more layers than MaxLayers", func() error {
			_, _, err := layerCut(MaxLayers+1, 1)
			return err
		}, ErrTooMany, OptionMaxLayerSize, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.err()
			var ae *amp.Error
			var hint *OptionHint
			if !errors.As(err, &ae) || amp.NameOf(ae) != tc.want || !errors.As(err, &hint) {
				t.Fatalf("%v: want %s caused by an OptionHint", err, tc.want)
			}
			if hint.Field != tc.field || hint.Host != tc.host || !strings.HasPrefix(ae.Message, hint.Refusal) {
				t.Errorf("hint %+v, want field %s, host %q, the message %q its refusal and remedy", hint, tc.field, tc.host, ae.Message)
			}
			if msg := err.Error(); strings.Contains(msg, "--") || !strings.Contains(msg, "Options."+tc.field) {
				t.Errorf("the library's refusal names a CLI flag, or not its own option: %q", msg)
			}
		})
	}
}

// cliFlag is a CLI flag (two dashes, a lower-case word) in a string.
var cliFlag = regexp.MustCompile(`--[a-z][a-z-]+`)

// TestLibraryMessagesNameNoCLIFlag: no string of the library's code
// (its messages among them) names a flag of ampbundle's CLI; the CLI adds
// its flags where it reports the library's refusals
// (docs/SPEC-DECISIONS.md OCI-24, OCI-25). Comments are not strings.
func TestLibraryMessagesNameNoCLIFlag(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			if s, err := strconv.Unquote(lit.Value); err == nil && cliFlag.MatchString(s) {
				t.Errorf("%s: a string names a CLI flag: %s", fset.Position(lit.Pos()), lit.Value)
			}
			return true
		})
	}
}

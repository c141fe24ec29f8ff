package main

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/ocitransport"
)

// TestOCIRefusalNamesTheCLIFlagNotTheLibraryOption: the failure. The
// ocitransport library's refusals that an Options field governs now name
// the field (Options.AllowRedirectHosts, …: an embedder's users have no
// flags), so an operator of this CLI would be told to set a Go field.
// push, pull, import and sync name the flag that sets it, with the host
// refused, the error name unchanged (docs/SPEC-DECISIONS.md OCI-25).
func TestOCIRefusalNamesTheCLIFlagNotTheLibraryOption(t *testing.T) {
	target := httptest.NewServer(http.NotFoundHandler())
	defer target.Close()
	_, port, _ := strings.Cut(strings.TrimPrefix(target.URL, "http://"), ":")
	reg := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://localhost:"+port+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	defer reg.Close()
	repo := "oci://" + strings.TrimPrefix(reg.URL, "http://") + "/amp/translate"
	db := newStore(t)
	for _, args := range [][]string{
		{"push", sampleFile("translate"), repo + ":v1"},
		{"pull", repo + ":v1", "-o", filepath.Join(t.TempDir(), "x.ampb")},
		{"import", repo + ":v1", "--db", db},
		{"sync", repo, "--db", db},
	} {
		r := runCLI(t, nil, append(args, "--plain-http")...)
		if r.code != 1 || !strings.Contains(r.stderr, "a redirect to a host not allowed") {
			t.Errorf("%s: exit %d, stderr %q, want the redirect refused", args[0], r.code, r.stderr)
			continue
		}
		if !strings.Contains(r.stderr, "--allow-redirect localhost") || strings.Contains(r.stderr, "Options.") {
			t.Errorf("%s: the refusal does not name the flag and the host, or names the library's option: %q", args[0], r.stderr)
		}
	}
}

// TestOCIFlagHintNamesEachOptionsFlag: each Options field an
// ocitransport refusal can name is reported with the flag that sets it,
// the error's name kept (docs/SPEC-DECISIONS.md OCI-25); an error
// without an OptionHint is left as it is.
func TestOCIFlagHintNamesEachOptionsFlag(t *testing.T) {
	for _, tc := range []struct {
		field, host, want string
	}{
		{ocitransport.OptionPlainHTTP, "", "refused; for a loopback registry add --plain-http (docs/CLI.md)"},
		{ocitransport.OptionPlainHTTPHosts, "reg.example:5000", "refused (name it with --plain-http-host reg.example:5000)"},
		{ocitransport.OptionAllowRedirectHosts, "cdn.example", "refused (allow it with --allow-redirect cdn.example)"},
		{ocitransport.OptionAllowAuthHosts, "auth.example", "refused (allow it with --allow-auth-host auth.example)"},
		{ocitransport.OptionAllowAuthHosts, "", "refused (allow it with --allow-auth-host)"},
		{ocitransport.OptionMaxLayerSize, "", "refused (a larger --max-layer-size cuts fewer)"},
	} {
		h := &ocitransport.OptionHint{Field: tc.field, Host: tc.host, Refusal: "refused"}
		lib := amp.Named(0, ocitransport.ErrTooMany, "refused (Options.%s)", tc.field).WithCause(h)
		got := ociFlagHint(lib)
		if amp.NameOf(got) != ocitransport.ErrTooMany || errMessage(got) != tc.want {
			t.Errorf("%s: %v, want %s: %s", tc.field, got, ocitransport.ErrTooMany, tc.want)
		}
		if strings.Contains(got.Error(), "Options.") {
			t.Errorf("%s: the CLI names the library's option: %v", tc.field, got)
		}
	}
	plain := amp.Named(0, ocitransport.ErrTooMany, "more than 3")
	if got := ociFlagHint(plain); got != error(plain) {
		t.Errorf("an error without a hint was changed: %v", got)
	}
}

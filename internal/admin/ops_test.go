//go:build unix

package admin

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/resolver"
)

// documentedRoutes returns the routes of the table in docs/FORMAT.md's
// section "Admin socket protocol" (to which docs/CLI.md §1.7 points), as
// "METHOD /path".
func documentedRoutes(t *testing.T) map[string]bool {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "docs", "FORMAT.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	routes := map[string]bool{}
	level := 0 // the section's heading level while in it, else 0
	row := regexp.MustCompile("^\\| `(GET|POST) ")
	path := regexp.MustCompile("/v1/[a-z/]*[a-z]")
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20) // a table row may be long
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "#"):
			// The section, found by its title so that moving or
			// renumbering it does not lose it; it ends at the next
			// heading of its level or a higher one.
			n := len(line) - len(strings.TrimLeft(line, "#"))
			switch {
			case strings.HasSuffix(strings.ToLower(line), " admin socket protocol"):
				level = n
			case n <= level:
				level = 0
			}
		case level > 0 && row.MatchString(line):
			method := row.FindStringSubmatch(line)[1]
			cell := strings.SplitN(line, "|", 3)[1]
			for _, p := range path.FindAllString(cell, -1) {
				routes[method+" "+p] = true
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(routes) == 0 {
		t.Fatal(`docs/FORMAT.md "Admin socket protocol" lists no route`)
	}
	return routes
}

// TestEveryOperationIsServedCalledAndDocumented: an operation added to one
// side only — a route the client cannot call, a Registry method with no
// route, a route the contract does not list — fails here, before an
// operator meets an unsupported or a 404 from an agent of the same build.
func TestEveryOperationIsServedCalledAndDocumented(t *testing.T) {
	dir := t.TempDir()
	s, err := resolver.Open(filepath.Join(dir, "store.db"), resolver.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	h := NewHandler(s, nil)
	docs := documentedRoutes(t)
	reg := reflect.TypeOf(&Registry{})
	client := reflect.TypeOf(&Client{})
	seen := map[string]bool{}
	for _, op := range Ops() {
		spec := op.Describe()
		route := spec.Method + " " + spec.Path
		if seen[route] {
			t.Errorf("%s: two operations share the route", route)
		}
		seen[route] = true
		if !docs[route] {
			t.Errorf("%s (%s) is not in the table of docs/FORMAT.md, \"Admin socket protocol\"", route, spec.Name)
		}
		for _, name := range append([]string{spec.Name}, spec.Also...) {
			if _, ok := reg.MethodByName(name); !ok {
				t.Errorf("%s: no Registry method %s calls it", route, name)
			}
			if _, ok := client.MethodByName(name); !ok {
				t.Errorf("%s: no Client method %s calls it", route, name)
			}
		}
		// Served: any answer but the mux's own 404 or 405 (which carry
		// no error document).
		body := "{}"
		if spec.Raw > 0 || spec.Stream {
			body = ""
		}
		req := httptest.NewRequest(spec.Method, spec.Path, strings.NewReader(body))
		req = req.WithContext(context.WithValue(req.Context(), peerUIDKey{}, os.Getuid()))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		var doc errorDoc
		if rec.Code != http.StatusOK && (json.NewDecoder(bytes.NewReader(rec.Body.Bytes())).Decode(&doc) != nil || doc.Error.Code == "") {
			t.Errorf("%s is not served: http %d %q", route, rec.Code, rec.Body.String())
		}
	}
	for route := range docs {
		if !seen[route] {
			t.Errorf("docs/FORMAT.md, \"Admin socket protocol\", lists %s, which no operation serves", route)
		}
	}
}

// TestEveryRegistryMethodIsAnOperation: a Registry method that reaches
// the store without an entry in Ops would work offline and be missing
// (or differ) through an agent's socket.
func TestEveryRegistryMethodIsAnOperation(t *testing.T) {
	named := map[string]bool{"Generation": true, "Close": true, "Store": true} // the Registry's own
	for _, op := range Ops() {
		spec := op.Describe()
		for _, name := range append([]string{spec.Name}, spec.Also...) {
			if named[name] {
				t.Errorf("%s names Registry method %s twice", spec.Path, name)
			}
			named[name] = true
		}
	}
	reg := reflect.TypeOf(&Registry{})
	for i := range reg.NumMethod() {
		if m := reg.Method(i).Name; !named[m] {
			t.Errorf("Registry.%s is no operation of Ops", m)
		}
	}
}

// TestLocalAndSocketRegistriesAnswerAlike: the command line gives the same
// output offline and through a running agent only if every read answers
// alike on both paths; a wire form that drops a field, or an error that
// loses its name on the way, fails here.
func TestLocalAndSocketRegistriesAnswerAlike(t *testing.T) {
	s, _, c := serve(t)
	local := Local(s)
	if err := local.TrustAddWithThreshold("example", publisher(t), []string{"org.example"}, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := local.Import(context.Background(), bytes.NewReader(sample(t, "translate.ampb")), resolver.ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	week := uint64(7)
	if err := c.SetFreshnessPolicy("org.example", &week, 0); err != nil {
		t.Fatal(err)
	}
	same := func(what string, read func(r *Registry) (any, error)) {
		t.Helper()
		a, aerr := read(local)
		b, berr := read(&c.Registry)
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		if !bytes.Equal(ja, jb) || (aerr == nil) != (berr == nil) || (aerr != nil && aerr.Error() != berr.Error()) {
			t.Errorf("%s: locally %s %v, through the socket %s %v", what, ja, aerr, jb, berr)
		}
	}
	same("Bundles", func(r *Registry) (any, error) { return r.Bundles() })
	same("Catalog", func(r *Registry) (any, error) { return r.Catalog() })
	same("Check", func(r *Registry) (any, error) { return r.Check() })
	same("TrustList", func(r *Registry) (any, error) { return r.TrustList() })
	same("TrustThresholds", func(r *Registry) (any, error) { return r.TrustThresholds() })
	same("TrustChains", func(r *Registry) (any, error) { return r.TrustChains() })
	same("FreshnessPolicy", func(r *Registry) (any, error) { return r.FreshnessPolicy() })
	same("Statements", func(r *Registry) (any, error) { return r.Statements() })
	same("Heartbeats", func(r *Registry) (any, error) { return r.Heartbeats() })
	same("Audit", func(r *Registry) (any, error) { return r.Audit() })
	same("AuditHead", func(r *Registry) (any, error) { return r.AuditHead() })
	same("VerifyAudit", func(r *Registry) (any, error) { return nil, r.VerifyAudit() })
	same("FetchGeneration", func(r *Registry) (any, error) { return r.FetchGeneration() })
	same("HasStatement", func(r *Registry) (any, error) { return r.HasStatement(make([]byte, 32)) })
	same("Remove unknown", func(r *Registry) (any, error) { return r.Remove("org.example.nope") })
	same("TrustRemove unknown", func(r *Registry) (any, error) { return nil, r.TrustRemove("nobody") })
	same("ResetHeartbeat unknown", func(r *Registry) (any, error) { return r.ResetHeartbeat("org.example.nope") })
	same("Export unknown", func(r *Registry) (any, error) { return nil, r.Export("org.example.nope", new(bytes.Buffer)) })
}

// TestOversizedUploadsAreRefusedByName: a peer's statement or policy
// upload beyond its bound is read no further than one byte past it and
// refused by name, with nothing written.
func TestOversizedUploadsAreRefusedByName(t *testing.T) {
	s, _, c := serve(t)
	gen := s.Generation()
	for _, tc := range []struct {
		send func([]byte) error
		size int
		want string
	}{
		{func(b []byte) error { _, err := c.ApplyRevocation(b); return err }, maxStatement + 1, "limit_exceeded"},
		{func(b []byte) error { _, err := c.ApplyHeartbeat(b); return err }, maxStatement + 1, "limit_exceeded"},
		{func(b []byte) error { _, err := c.ApplyTrustPolicyFile(b); return err }, resolver.MaxTrustPolicySize + 1, "limit_exceeded"},
		{func(b []byte) error { _, err := c.ApplyTrustPolicyFile(b); return err }, resolver.MaxTrustPolicySize + 4096, "limit_exceeded"},
	} {
		if err := tc.send(make([]byte, tc.size)); string(amp.NameOf(err)) != tc.want {
			t.Errorf("%d bytes: %v, want %s", tc.size, err, tc.want)
		}
	}
	if s.Generation() != gen {
		t.Fatal("a refused upload changed the store")
	}
}

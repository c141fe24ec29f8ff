package catalog

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/capability"
	"github.com/ampbundle/ampbundle/resolver"
)

// floodedTrust is a store's trust side with n of each of its lists:
// keys, thresholds, freshness bounds and revocation statements (whose
// content does not parse, so each shows its error).
type floodedTrust struct{ n int }

func (floodedTrust) Generation() uint64                  { return 1 }
func (floodedTrust) Bundles() ([]resolver.Bundle, error) { return nil, nil }
func (floodedTrust) Catalog() (*resolver.Catalog, error) {
	return &resolver.Catalog{Generation: 1, ByName: map[string][]resolver.Entry{}, Aliases: map[string]string{}}, nil
}
func (floodedTrust) Resolve(capability.SchemaRef) ([]byte, error) { return nil, nil }

func (f floodedTrust) TrustList() ([]resolver.TrustKey, error) {
	out := make([]resolver.TrustKey, f.n)
	for i := range out {
		seed := sha256.Sum256(fmt.Appendf(nil, "key %d", i))
		out[i] = resolver.TrustKey{Name: fmt.Sprintf("key%05d", i), Key: ed25519.NewKeyFromSeed(seed[:]).Public().(ed25519.PublicKey),
			Scopes: []string{"org.flood"}}
	}
	return out, nil
}

func (f floodedTrust) TrustThresholds() (map[string]int, error) {
	out := map[string]int{}
	for i := range f.n {
		out[fmt.Sprintf("org.flood.t%05d", i)] = 2
	}
	return out, nil
}

func (f floodedTrust) FreshnessPolicy() ([]resolver.Freshness, error) {
	out := make([]resolver.Freshness, f.n)
	for i := range out {
		out[i] = resolver.Freshness{Scope: fmt.Sprintf("org.flood.f%05d", i), MaxAgeSeconds: 60}
	}
	return out, nil
}

func (f floodedTrust) Statements() ([]resolver.Statement, error) {
	out := make([]resolver.Statement, f.n)
	for i := range out {
		data := fmt.Appendf(nil, "statement %d", i)
		sum := sha256.Sum256(data)
		out[i] = resolver.Statement{Seq: uint64(i + 1), ContentType: bundle.MediaTypeRevocation, SHA256: sum[:], Data: data}
	}
	return out, nil
}

func (floodedTrust) AuditHead() ([]byte, error) { return bytes.Repeat([]byte{1}, 32), nil }

// TestFloodedTrustStoreCannotMakeTheTrustPageUnbounded: a store may hold
// 10,000 revocation statements (and as many keys, thresholds and
// freshness bounds), and /ui/trust rendered every one in one answer,
// built on every request by anyone, 16 at once. Each list of the trust
// page is now paged at PageSize by its own parameter, like the bundle
// page's (CATALOG-11), and its links keep the other lists' pages.
func TestFloodedTrustStoreCannotMakeTheTrustPageUnbounded(t *testing.T) {
	const n = 3*PageSize + 7
	h, err := NewHandler(Options{Source: floodedTrust{n: n}, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	lists := []struct{ param, row string }{
		{"keys_page", `<th scope="row">key`},
		{"thresholds_page", `<li><code>org.flood.t`},
		{"freshness_page", `<li><code>org.flood.f`},
		{"revocations_page", `<li>#`},
	}
	res, body := get(t, h, http.MethodGet, "/ui/trust")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("/ui/trust: status %d", res.StatusCode)
	}
	for _, l := range lists {
		if got := strings.Count(body, l.row); got != PageSize {
			t.Errorf("/ui/trust shows %d rows of %s in one %d KiB answer, want a page of %d", got, l.param, len(body)>>10, PageSize)
		}
	}
	// The last page of each list, the others kept on their second page.
	target := "/ui/trust?keys_page=2&thresholds_page=2&freshness_page=2&revocations_page=2"
	for _, l := range lists {
		target := strings.Replace(target, l.param+"=2", l.param+"=4", 1)
		res, body := get(t, h, http.MethodGet, target)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("%s: status %d", target, res.StatusCode)
		}
		if got := strings.Count(body, l.row); got != n-3*PageSize {
			t.Errorf("%s shows %d rows of %s, want the last %d", target, got, l.param, n-3*PageSize)
		}
		for _, o := range lists {
			if o.param != l.param && !strings.Contains(body, o.param+"=2") {
				t.Errorf("%s: the links of the lists do not keep %s's page", target, o.param)
			}
		}
	}
}

package ocitransport

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestHostileChallengeRealmIsReadAsTheClientReadsIt: the realm the round
// tripper notes (to bound the token answer, and to police its host) must
// be the one the registry client will dial, however the registry shapes
// its challenge: case of the scheme, quoting, escapes, a realm given
// twice, a malformed tail.
func TestHostileChallengeRealmIsReadAsTheClientReadsIt(t *testing.T) {
	for _, tc := range []struct {
		header, realm string
		ok            bool
	}{
		{`Bearer realm="https://a.example/token",service="reg"`, "https://a.example/token", true},
		{`bEaReR realm=https://a.example/token`, "https", true}, // ':' ends an unquoted token
		{`Bearer realm="https://a.example/t\"x"`, `https://a.example/t"x`, true},
		{`Bearer realm="https://a.example/1", realm="https://b.example/2"`, "https://b.example/2", true},
		{`Bearer realm="https://a.example/1" junk, realm="https://b.example/2"`, "https://a.example/1", true},
		{`Bearer service="reg"`, "", false},
		{`Basic realm="https://a.example/token"`, "", false},
		{`Bearer realm="https://a.example/unterminated`, "", false},
		{``, "", false},
	} {
		realm, ok := bearerRealm(tc.header)
		if realm != tc.realm || ok != tc.ok {
			t.Errorf("%q: realm %q, %v; want %q, %v", tc.header, realm, ok, tc.realm, tc.ok)
		}
	}
}

// TestHostileRealmOnRegistryPathIsBoundedAsOther: a realm the registry
// names on a path that looks like a blob of the repository is classified
// as any other answer (bounded in bytes and time), and past MaxRealms a
// challenge naming yet another realm is refused.
func TestHostileRealmOnRegistryPathIsBoundedAsOther(t *testing.T) {
	o := Options{}
	o.defaults()
	bt := &boundedTransport{registry: "reg.example", repo: "amp/x", o: &o}
	blob, _ := url.Parse("https://reg.example/v2/amp/x/blobs/sha256:00")
	if k := bt.classify(&http.Request{URL: blob}); k != respBlob {
		t.Fatalf("a blob GET classified %d before any realm", k)
	}
	for i := range MaxRealms {
		resp := &http.Response{StatusCode: http.StatusUnauthorized, Header: http.Header{}}
		p := "/v2/amp/x/blobs/sha256:00"
		if i > 0 {
			p += strings.Repeat("0", i)
		}
		resp.Header.Set("Www-Authenticate", `Bearer realm="https://reg.example`+p+`"`)
		if err := bt.noteRealm(resp); err != nil {
			t.Fatalf("realm %d refused: %v", i, err)
		}
	}
	if k := bt.classify(&http.Request{URL: blob}); k != respOther {
		t.Fatalf("a realm on a blob's path classified %d, not as any other answer", k)
	}
	resp := &http.Response{StatusCode: http.StatusUnauthorized, Header: http.Header{}}
	resp.Header.Set("Www-Authenticate", `Bearer realm="https://reg.example/one-more"`)
	if err := bt.noteRealm(resp); err == nil {
		t.Fatalf("a challenge naming realm %d was not refused", MaxRealms+1)
	}
}

// FuzzBearerRealm: a challenge never panics the parser, and a realm is
// found only in a Bearer challenge.
func FuzzBearerRealm(f *testing.F) {
	f.Add(`Bearer realm="https://auth.example/token",service="reg",scope="repository:a/b:pull"`)
	f.Add(`Basic realm="x"`)
	f.Add(`Bearer realm="\u0000",realm=x`)
	f.Add(`Bearer ,,,`)
	f.Fuzz(func(t *testing.T, header string) {
		if _, ok := bearerRealm(header); ok && !strings.EqualFold(header[:min(6, len(header))], "bearer") {
			t.Fatalf("a realm found in a non-Bearer challenge %q", header)
		}
	})
}

package a2acard

import (
	"crypto/ed25519"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
)

// TestNewRefusesAURLVerifyRefuses: New and Verify judge the card's url by
// one rule (WebURL, A2A-14) (threat: an agent writing a card whose
// interface url carries userinfo or no host, "https://agent.example@evil",
// accepted when the card is built and refused only when Sign checks what
// it wrote, with another error; or the CLI's own looser copy of the rule
// letting it through). Every url New accepts, Sign's Verify accepts.
func TestNewRefusesAURLVerifyRefuses(t *testing.T) {
	served := []Served{{ID: "org.example.cap:1.0.0", Name: "org.example.cap", Version: "1.0.0", BundleID: "org.example.cap",
		InputSchema:  "sha-256:0276a8a7792081dc02262d569a1ba5cb2f387f2ce3b9808f7a3de7593bb7a48a",
		OutputSchema: "sha-256:a6ad3b2318e8136aec9a2d8cb14ce742dd82382205384cf9f9fa35001a271220"}}
	for _, tc := range []struct {
		url string
		ok  bool
	}{
		{"https://agent.example/amp", true}, {"http://127.0.0.1:8080/amp", true},
		{"https://agent.example@evil.example/amp", false}, {"https://user:pw@agent.example/amp", false},
		{"https://:443/amp", false}, {"file:///etc/passwd", false}, {"javascript:alert(1)", false},
		{"//agent.example/amp", false}, {"https:agent.example", false},
	} {
		c, err := New(Options{Name: "a", Version: "1", URL: tc.url}, served)
		if !tc.ok {
			if amp.NameOf(err) != ErrInvalid {
				t.Errorf("%q: New error %v, want %s", tc.url, err, ErrInvalid)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%q: %v", tc.url, err)
		}
		key := vectorKey()
		if _, err := Sign(c, key, DIDKeyID(key.Public().(ed25519.PublicKey))); err != nil {
			t.Errorf("%q: New accepted it, Sign refused it: %v", tc.url, err)
		}
	}
}

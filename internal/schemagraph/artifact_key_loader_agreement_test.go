package schemagraph

import (
	"net/url"
	"testing"
)

// TestArtifactKeyRefusesWhatTheLoaderRefuses: a reference whose resolved
// target is an artifact URL with an empty query ("?"), a fragment, a host
// or a dot segment names no artifact: the offline loader refuses to load
// it, so a checker reading it as that artifact would compare a schema the
// validator never compiles.
func TestArtifactKeyRefusesWhatTheLoaderRefuses(t *testing.T) {
	for _, ref := range []string{"ampbundle:///a.json?", "ampbundle:///a.json?x", "ampbundle://h/a.json",
		"ampbundle:///a/../b.json", "ampbundle:///a.json#/x", "ampbundle:a.json", "other:///a.json"} {
		u, err := url.Parse(ref)
		if err != nil {
			t.Fatal(err)
		}
		if k, ok := ArtifactKey(u); ok {
			t.Errorf("ArtifactKey(%q) = %q, true", ref, k)
		}
	}
	u, _ := url.Parse(ArtifactURL("schemas/a b.json"))
	if k, ok := ArtifactKey(u); !ok || k != "schemas/a b.json" {
		t.Fatalf("ArtifactKey(%q) = %q, %v", u, k, ok)
	}
}

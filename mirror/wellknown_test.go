package mirror

import (
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/internal/termtest"
)

// The annotated example of docs/FORMAT.md: it decodes, passes Check, keeps
// its unknown key, and matches what a mirror serves (generation aside).
func TestWellKnownExampleOfTheDocs(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "testdata", "mirror", "well-known.json"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := DecodeCapabilities(data)
	if err != nil {
		t.Fatal(err)
	}
	if string(c.Extra["x_site_note"]) == "" {
		t.Fatal("unknown top-level key dropped")
	}
	m, ts := startMirror(t, newStore(t, testBundle(t, 1)), nil)
	served := m.Capabilities()
	served.Generation, c.Generation, c.Extra = 0, 0, nil
	a, _ := json.Marshal(served)
	b, _ := json.Marshal(c)
	if string(a) != string(b) {
		t.Fatalf("served document differs from the docs example:\n%s\n%s", a, b)
	}
	resp, err := ts.Client().Get(ts.URL + WellKnownPath)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if _, err := DecodeCapabilities(body); err != nil {
		t.Fatalf("served document fails its own check: %v", err)
	}
}

// Documents a client must refuse, each naming the field at fault
// (testdata/mirror/bad/expected.json).
func TestMisconfiguredCapabilitiesNameTheField(t *testing.T) {
	dir := filepath.Join("..", "testdata", "mirror", "bad")
	raw, err := os.ReadFile(filepath.Join(dir, "expected.json"))
	if err != nil {
		t.Fatal(err)
	}
	var want map[string]string
	if err := json.Unmarshal(raw, &want); err != nil || len(want) == 0 {
		t.Fatalf("no expectations: %v", err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	if len(files) != len(want)+1 {
		t.Fatalf("%d files for %d expectations", len(files), len(want))
	}
	for name, field := range want {
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			_, err = DecodeCapabilities(data)
			if !errors.Is(err, ErrMisconfigured) || !strings.Contains(err.Error(), field) {
				t.Fatalf("err %v, want misconfigured naming %s", err, field)
			}
		})
	}
}

// TestCapabilitiesErrorCannotCarryTerminalSequences: an endpoints key that
// is not a plain name is not repeated in the error (which 'ampbundle sync'
// prints), while a plain one still names the field (threat: a hostile
// mirror writing terminal sequences through its capabilities document).
func TestCapabilitiesErrorCannotCarryTerminalSequences(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "testdata", "mirror", "well-known.json"))
	if err != nil {
		t.Fatal(err)
	}
	withKey := func(k string) error {
		var doc map[string]any
		if err := json.Unmarshal(data, &doc); err != nil {
			t.Fatal(err)
		}
		doc["endpoints"].(map[string]any)[k] = "relative"
		b, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		_, err = DecodeCapabilities(b)
		if !errors.Is(err, ErrMisconfigured) {
			t.Fatalf("key %.40q: err %v, want misconfigured", k, err)
		}
		return err
	}
	for _, p := range termtest.Payloads {
		termtest.Check(t, p.Name, withKey(p.Text).Error(), 200)
	}
	if err := withKey("x_status"); !strings.Contains(err.Error(), "endpoints.x_status must be an absolute path") {
		t.Errorf("a plain key is not named: %v", err)
	}
}

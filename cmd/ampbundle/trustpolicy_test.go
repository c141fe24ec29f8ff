package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestTrustPolicyApplyThroughTheCLI: the documented example sets up a new
// store in one step, again changes nothing; a policy whose threshold its
// keys cannot reach, or a malformed one, is refused (exit 1) and leaves no
// store behind.
func TestTrustPolicyApplyThroughTheCLI(t *testing.T) {
	example := filepath.Join("..", "..", "testdata", "trust-policy", "example.json")
	data, err := os.ReadFile(example)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	db := filepath.Join(dir, "store.db")
	var res struct {
		Added     []string `json:"added"`
		Unchanged bool     `json:"unchanged"`
	}
	mustJSON(t, &res, "trust", "policy", "apply", example, "--db", db)
	if len(res.Added) != 3 || res.Unchanged {
		t.Fatalf("apply %+v", res)
	}
	var ls struct {
		Keys []struct {
			Name string `json:"name"`
		} `json:"keys"`
		Thresholds map[string]int `json:"thresholds"`
	}
	mustJSON(t, &ls, "trust", "ls", "--db", db)
	if len(ls.Keys) != 3 || ls.Thresholds["org.example"] != 2 || ls.Thresholds["org.example.bank"] != 3 {
		t.Fatalf("trust ls %+v", ls)
	}
	mustJSON(t, &res, "trust", "policy", "apply", "--db", db, example)
	if !res.Unchanged {
		t.Fatalf("again %+v", res)
	}

	unreachable := filepath.Join(dir, "unreachable.json")
	os.WriteFile(unreachable, bytes.Replace(data, []byte(`"org.example.bank": 3`), []byte(`"org.example.bank": 4`), 1), 0o644)
	malformed := filepath.Join(dir, "malformed.json")
	os.WriteFile(malformed, bytes.Replace(data, []byte(`"format"`), []byte(`"format": "x", "format"`), 1), 0o644)
	for _, f := range []string{unreachable, malformed} {
		fresh := filepath.Join(t.TempDir(), "fresh.db")
		failsWith(t, "invalid_policy", "trust", "policy", "apply", f, "--db", fresh)
		if _, err := os.Stat(fresh); err == nil {
			t.Fatalf("%s: a refused policy left a store behind", f)
		}
	}
}

package main

import (
	"path/filepath"
	"testing"
)

// TestRotationChainOffline: a scope's keys rotate through signed trust
// statements; a store that missed them is refused statement 2 before 1
// (rotation_gap), then walks the chain in order; the retired key's
// signature no longer counts toward the new threshold.
func TestRotationChainOffline(t *testing.T) {
	keys, pubs := officers(t, 3)
	dir := t.TempDir()
	s1, s2 := filepath.Join(dir, "s1.cbor"), filepath.Join(dir, "s2.cbor")
	mustRun(t, "rotate", "-o", s1, "--scope", "org.example", "--add", "b="+pubs[1], "--key", keys[0], "--created", "2026-11-20T00:00:00Z")
	mustRun(t, "rotate", "-o", s2, "--scope", "org.example", "--after", s1, "--add", "c="+pubs[2], "--retire", pubs[0],
		"--threshold", "2", "--key", keys[1], "--created", "2026-11-21T00:00:00Z")
	db := filepath.Join(t.TempDir(), "store.db")
	mustRun(t, "trust", "add", pubs[0], "--db", db, "--name", "a", "--scope", "org.example")
	failsWith(t, "rotation_gap", "import", s2, "--db", db)
	mustRun(t, "import", s1, "--db", db)
	mustRun(t, "import", s2, "--db", db)
	var ls struct {
		Keys []struct {
			Name string `json:"name"`
		} `json:"keys"`
		Thresholds map[string]int    `json:"thresholds"`
		Chains     map[string]uint64 `json:"chains"`
	}
	mustJSON(t, &ls, "trust", "ls", "--db", db)
	if len(ls.Keys) != 2 || ls.Keys[0].Name != "b" || ls.Thresholds["org.example"] != 2 || ls.Chains["org.example"] != 2 {
		t.Fatalf("after the chain: %+v", ls)
	}
	b := filepath.Join(dir, "t.ampb")
	mustRun(t, "build", filepath.Join(testdata, "translate"), "-o", b, "--key", keys[0], "--key", keys[1], "--created", "2026-11-01T00:00:00Z")
	failsWith(t, "threshold_not_met", "import", b, "--db", db)
	mustRun(t, "sign", b, "--key", keys[2])
	mustRun(t, "import", b, "--db", db)
}

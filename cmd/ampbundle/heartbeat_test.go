package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// TestFreezeAttackThroughTheCLI: an operator keeps importing version 1
// while the publisher's heartbeat says version 3; with trust freshness
// --max-versions 1 the bundle fails closed (5002 bundle_stale), ls and
// check list it; an older heartbeat replayed is refused, and a heartbeat
// signed by a key trusted for another scope is refused.
func TestFreezeAttackThroughTheCLI(t *testing.T) {
	keys, pubs := officers(t, 2)
	dir := t.TempDir()
	b := filepath.Join(dir, "t.ampb")
	mustRun(t, "build", filepath.Join(testdata, "translate"), "-o", b, "--key", keys[0], "--created", "2026-11-01T00:00:00Z")
	db := filepath.Join(t.TempDir(), "store.db")
	mustRun(t, "trust", "add", pubs[0], "--db", db, "--name", "officer-a", "--scope", "org.example")
	mustRun(t, "trust", "add", pubs[1], "--db", db, "--name", "officer-b", "--scope", "com.acme")
	mustRun(t, "import", b, "--db", db)
	mustRun(t, "trust", "freshness", "--max-versions", "1", "--db", db)
	key := "dids/translator.json"
	want, _ := os.ReadFile(filepath.Join(testdata, "translate", key))
	resolveArgs := []string{"resolve", "--db", db, "--bundle-id", translateID, "--artifact-key", key, "--hash", sha256hex(want)}
	mustRun(t, resolveArgs...)

	other := filepath.Join(dir, "hb-other.cbor")
	mustRun(t, "heartbeat", "-o", other, "--bundle-id", translateID, "--version", "3", "--key", keys[1], "--created", "2026-11-22T00:00:00Z")
	failsWith(t, "untrusted_namespace", "import", other, "--db", db)

	hb := filepath.Join(dir, "hb3.cbor")
	mustRun(t, "heartbeat", "-o", hb, "--bundle-id", translateID, "--version", "3", "--key", keys[0], "--created", "2026-11-22T00:00:00Z")
	var res struct {
		Heartbeat struct {
			Stale     string `json:"stale"`
			Installed uint64 `json:"installed_version"`
		} `json:"heartbeat"`
	}
	mustJSON(t, &res, "import", hb, "--db", db)
	if res.Heartbeat.Stale == "" || res.Heartbeat.Installed != 1 {
		t.Fatalf("heartbeat %+v", res)
	}
	r := failsWith(t, "bundle_stale", resolveArgs...)
	if ampCode(t, r) != 5002 {
		t.Fatalf("amp code %d", ampCode(t, r))
	}
	if r := mustRun(t, "ls", "--db", db); !strings.Contains(r.stdout, "STALE") {
		t.Fatalf("ls does not list the stale bundle:\n%s", r.stdout)
	}
	if r := failsWith(t, "bundle_stale", "check", "--db", db); !strings.Contains(r.stdout, translateID+"@1") { // CLI-21
		t.Fatalf("check %s", r.stdout)
	}
	old := filepath.Join(dir, "hb2.cbor")
	mustRun(t, "heartbeat", "-o", old, "--bundle-id", translateID, "--version", "2", "--key", keys[0], "--created", "2026-11-21T00:00:00Z")
	failsWith(t, "heartbeat_replayed", "import", old, "--db", db)
	mustRun(t, "trust", "freshness", "--scope", "org.example", "--max-age", "30d", "--db", db)
	var pol struct {
		Freshness []struct {
			Scope         string  `json:"scope"`
			MaxVersions   *uint64 `json:"max_versions"`
			MaxAgeSeconds uint64  `json:"max_age_seconds"`
		} `json:"freshness"`
	}
	mustJSON(t, &pol, "trust", "freshness", "--db", db)
	if len(pol.Freshness) != 2 || pol.Freshness[1].Scope != "org.example" || pol.Freshness[1].MaxVersions != nil || pol.Freshness[1].MaxAgeSeconds != 30*86400 {
		t.Fatalf("policy %+v", pol)
	}
	for _, bad := range []string{"30", "0d", "1.5d", "-3d", "99999999d"} {
		if r := runCLI(t, nil, "trust", "freshness", "--max-age", bad, "--db", db, "--json"); r.code != 2 || errorCode(t, r) != "usage" {
			t.Fatalf("--max-age %s: exit %d %s", bad, r.code, r.stdout)
		}
	}
	if r := mustRun(t, "trust", "freshness", "--db", db); !strings.Contains(r.stdout, "*: at most 1 version(s)") {
		t.Fatalf("freshness list:\n%s", r.stdout)
	}
	if r := runCLI(t, nil, "heartbeat", "-o", old, "--bundle-id", translateID, "--version", "0", "--key", keys[0], "--json"); r.code != 2 || errorCode(t, r) != "usage" {
		t.Fatalf("--version 0: exit %d %s", r.code, r.stdout)
	}
}

// TestHeartbeatBelowThresholdThenCosigned: under a 2-of-2 threshold a
// heartbeat signed by one officer is refused (threshold_not_met) and the
// installed bundle keeps working; co-signed in another room with
// 'ampbundle sign' it applies and the frozen bundle fails closed.
func TestHeartbeatBelowThresholdThenCosigned(t *testing.T) {
	keys, pubs := officers(t, 2)
	dir := t.TempDir()
	b := filepath.Join(dir, "t.ampb")
	mustRun(t, "build", filepath.Join(testdata, "translate"), "-o", b, "--key", keys[0], "--key", keys[1], "--created", "2026-11-01T00:00:00Z")
	db := filepath.Join(t.TempDir(), "store.db")
	for i, n := range []string{"officer-a", "officer-b"} {
		mustRun(t, "trust", "add", pubs[i], "--db", db, "--name", n, "--scope", "org.example")
	}
	mustRun(t, "trust", "threshold", "org.example", "2", "--db", db)
	mustRun(t, "import", b, "--db", db)
	mustRun(t, "trust", "freshness", "--max-versions", "0", "--db", db)
	key := "dids/translator.json"
	want, _ := os.ReadFile(filepath.Join(testdata, "translate", key))
	resolveArgs := []string{"resolve", "--db", db, "--bundle-id", translateID, "--artifact-key", key, "--hash", sha256hex(want)}
	hb := filepath.Join(dir, "hb.cbor")
	mustRun(t, "heartbeat", "-o", hb, "--bundle-id", translateID, "--version", "2", "--key", keys[0], "--created", "2026-11-22T00:00:00Z")
	failsWith(t, "threshold_not_met", "import", hb, "--db", db)
	mustRun(t, resolveArgs...)
	mustRun(t, "sign", hb, "--key", keys[1])
	mustRun(t, "import", hb, "--db", db)
	failsWith(t, "bundle_stale", resolveArgs...)
	if r := mustRun(t, "import", hb, "--db", db); !strings.Contains(r.stdout, "unchanged") {
		t.Fatalf("re-import: %s", r.stdout)
	}
}

// TestHeartbeatPinResetThroughTheCLI: a heartbeat that pins a line stale
// is forgotten by trust freshness --reset LINE (audited), after which the
// bundle is served again; a heartbeat beyond the version cap is refused;
// --reset of a line without one is no_heartbeat, and with a bound is a
// usage error.
func TestHeartbeatPinResetThroughTheCLI(t *testing.T) {
	keys, pubs := officers(t, 1)
	dir := t.TempDir()
	b := filepath.Join(dir, "t.ampb")
	mustRun(t, "build", filepath.Join(testdata, "translate"), "-o", b, "--key", keys[0], "--created", "2026-11-01T00:00:00Z")
	db := filepath.Join(t.TempDir(), "store.db")
	mustRun(t, "trust", "add", pubs[0], "--db", db, "--name", "officer-a", "--scope", "org.example")
	mustRun(t, "import", b, "--db", db)
	mustRun(t, "trust", "freshness", "--max-versions", "1", "--db", db)
	key := "dids/translator.json"
	want, _ := os.ReadFile(filepath.Join(testdata, "translate", key))
	resolveArgs := []string{"resolve", "--db", db, "--bundle-id", translateID, "--artifact-key", key, "--hash", sha256hex(want)}

	far := filepath.Join(dir, "hb-far.cbor")
	mustRun(t, "heartbeat", "-o", far, "--bundle-id", translateID, "--version", "18446744073709551615", "--key", keys[0], "--created", "2026-11-22T00:00:00Z")
	failsWith(t, "heartbeat_too_far", "import", far, "--db", db)
	hb := filepath.Join(dir, "hb.cbor")
	mustRun(t, "heartbeat", "-o", hb, "--bundle-id", translateID, "--version", "900", "--key", keys[0], "--created", "2026-11-22T00:00:00Z")
	mustRun(t, "import", hb, "--db", db)
	failsWith(t, "bundle_stale", resolveArgs...)

	if r := runCLI(t, nil, "trust", "freshness", "--reset", translateID, "--max-versions", "2", "--db", db); r.code != 2 {
		t.Fatalf("--reset with a bound: exit %d", r.code)
	}
	var res struct {
		Reset     string `json:"reset"`
		Forgotten uint64 `json:"forgotten_version"`
	}
	mustJSON(t, &res, "trust", "freshness", "--reset", translateID, "--db", db)
	if res.Reset != translateID || res.Forgotten != 900 {
		t.Fatalf("reset %+v", res)
	}
	mustRun(t, resolveArgs...)
	var log struct {
		Entries []struct {
			Action   string `json:"action"`
			BundleID string `json:"bundle_id"`
		} `json:"entries"`
	}
	mustJSON(t, &log, "audit", "--db", db)
	if e := log.Entries[len(log.Entries)-1]; e.Action != "heartbeat_reset" || e.BundleID != translateID {
		t.Fatalf("audit %+v", e)
	}
	failsWith(t, "no_heartbeat", "trust", "freshness", "--reset", translateID, "--db", db)
}

// TestResetOfAnUnreadableHeartbeatSaysWhatItCleared: a kept heartbeat
// record that does not decode pins its line stale (fail closed); trust
// freshness --reset clears it, and says so, never a made-up "version >=
// 0" that no heartbeat can name (threat: an operator misled about what
// was pinning the line). The record is damaged directly in the store
// file, as a bad disk or an older writer would leave it.
func TestResetOfAnUnreadableHeartbeatSaysWhatItCleared(t *testing.T) {
	keys, pubs := officers(t, 1)
	dir := t.TempDir()
	b := filepath.Join(dir, "t.ampb")
	mustRun(t, "build", filepath.Join(testdata, "translate"), "-o", b, "--key", keys[0], "--created", "2026-11-01T00:00:00Z")
	db := filepath.Join(t.TempDir(), "store.db")
	mustRun(t, "trust", "add", pubs[0], "--db", db, "--name", "officer-a", "--scope", "org.example")
	mustRun(t, "import", b, "--db", db)
	mustRun(t, "trust", "freshness", "--max-versions", "1", "--db", db)
	key := "dids/translator.json"
	want, _ := os.ReadFile(filepath.Join(testdata, "translate", key))
	resolveArgs := []string{"resolve", "--db", db, "--bundle-id", translateID, "--artifact-key", key, "--hash", sha256hex(want)}

	raw, err := bolt.Open(db, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = raw.Update(func(tx *bolt.Tx) error { return tx.Bucket([]byte("heartbeat")).Put([]byte(translateID), []byte{0xff}) })
	if cerr := raw.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	failsWith(t, "bundle_stale", resolveArgs...)

	r := mustRun(t, "trust", "freshness", "--reset", translateID, "--db", db)
	if !strings.Contains(r.stdout, "cleared the unreadable heartbeat record of "+translateID) || strings.Contains(r.stdout, "version >=") {
		t.Fatalf("reset of an unreadable record printed: %s", r.stdout)
	}
	mustRun(t, resolveArgs...)
	failsWith(t, "no_heartbeat", "trust", "freshness", "--reset", translateID, "--db", db)
}

// TestResetMessageNamesOnlyARealVersion: the reset's line states the
// forgotten heartbeat's version only when there was one (>= 1); 0 is the
// unreadable record.
func TestResetMessageNamesOnlyARealVersion(t *testing.T) {
	for _, c := range []struct {
		version uint64
		want    string
	}{
		{900, "forgot the heartbeat of org.example.translate (version >= 900); "},
		{1, "forgot the heartbeat of org.example.translate (version >= 1); "},
		{0, "cleared the unreadable heartbeat record of org.example.translate; "},
	} {
		got := resetMessage("org.example.translate", c.version)
		if !strings.HasPrefix(got, c.want) || strings.Contains(got, ">= 0") {
			t.Errorf("version %d: %q, want prefix %q", c.version, got, c.want)
		}
	}
}

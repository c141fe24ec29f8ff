//go:build unix

package main

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/internal/admin"
	"github.com/ampbundle/ampbundle/mirror"
	"github.com/ampbundle/ampbundle/resolver"
)

// holdStore opens db as a serving agent does (exclusive lock) and serves
// its admin socket at sock.
func holdStore(t *testing.T, db, sock string) *resolver.Store {
	t.Helper()
	s, err := resolver.Open(db, resolver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := admin.Listen(sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: admin.NewHandler(s, nil), ConnContext: admin.ConnContext}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close(); s.Close() })
	return s
}

// holdStoreAsOlderAgent is holdStore for an agent older than this
// ampbundle: the admin routes for which lacks says true are not found
// (404 without an error document).
func holdStoreAsOlderAgent(t *testing.T, db string, lacks func(path string) bool) *resolver.Store {
	t.Helper()
	s, err := resolver.Open(db, resolver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := admin.Listen(admin.SocketPath(db))
	if err != nil {
		t.Fatal(err)
	}
	h := admin.NewHandler(s, nil)
	old := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if lacks(r.URL.Path) {
			http.NotFound(w, r)
			return
		}
		h.ServeHTTP(w, r)
	})
	srv := &http.Server{Handler: old, ConnContext: admin.ConnContext}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close(); s.Close() })
	return s
}

const viaAgent = "note: the store is held by a running agent; using its admin socket"

// TestAdminSocketFallback: while an agent holds the store, every registry
// command works through the agent's admin socket, with the same output and
// the same refusals (wrong key, tampering, rollback) as offline.
func TestAdminSocketFallback(t *testing.T) {
	db := storeWithSamples(t)
	offlineLs := mustRun(t, "ls", "--db", db).stdout
	offlineAudit := mustRun(t, "audit", "--db", db).stdout
	s := holdStore(t, db, admin.SocketPath(db))

	via := func(args ...string) result {
		t.Helper()
		return viaAgentRun(t, args...)
	}
	if got := via("ls", "--db", db).stdout; got != offlineLs {
		t.Fatalf("ls through the agent differs:\n%s\noffline:\n%s", got, offlineLs)
	}
	if got := via("audit", "--db", db).stdout; got != offlineAudit {
		t.Fatalf("audit through the agent differs:\n%s\noffline:\n%s", got, offlineAudit)
	}
	via("check", "--db", db)
	if r := via("trust", "ls", "--db", db); !strings.Contains(r.stdout, exampleDID) {
		t.Fatalf("trust ls: %s", r.stdout)
	}
	schema, err := os.ReadFile(filepath.Join(testdata, "translate", schemaKey100))
	if err != nil {
		t.Fatal(err)
	}
	if r := via("resolve", "--db", db, "--bundle-id", translateID, "--artifact-key", schemaKey100, "--hash", sha256hex(schema)); r.stdout != string(schema) {
		t.Fatal("resolve through the agent returned other bytes")
	}
	out := filepath.Join(t.TempDir(), "exported.ampb")
	via("export", translateID, "--db", db, "--out", out)
	exported, _ := os.ReadFile(out)
	original, _ := os.ReadFile(sampleFile("translate"))
	if string(exported) != string(original) {
		t.Fatal("export through the agent is not byte-identical")
	}

	// Refusals keep their names.
	failsWith(t, "hash_mismatch", "resolve", "--db", db, "--bundle-id", translateID, "--artifact-key", schemaKey100, "--hash", sha256hex([]byte("x")))
	tampered := filepath.Join(t.TempDir(), "tampered.ampb")
	original[len(original)-10] ^= 1
	os.WriteFile(tampered, original, 0o600)
	if r := runCLI(t, nil, "import", tampered, "--db", db); r.code != 1 {
		t.Fatalf("tampered import through the agent: exit %d", r.code)
	}

	// Changes land in the agent's store at once.
	via("rm", geoID, "--db", db)
	if bs, _ := s.Bundles(); len(bs) != 1 {
		t.Fatalf("after rm through the agent: %+v", bs)
	}
	via("import", translateVersion(t, 2), "--db", db)
	if bs, _ := s.Bundles(); len(bs) != 1 || bs[0].Version != 2 {
		t.Fatalf("after import through the agent: %+v", bs)
	}
	failsWith(t, "rollback", "import", sampleFile("translate"), "--db", db)
	via("trust", "rm", "acme", "--db", db)
	if keys, _ := s.TrustList(); len(keys) != 1 {
		t.Fatalf("after trust rm through the agent: %+v", keys)
	}
	via("trust", "add", samplePub("acme-publisher"), "--db", db, "--name", "acme", "--scope", "com.acme")
	if err := s.VerifyAudit(); err != nil {
		t.Fatal(err)
	}
}

// TestAdminSocketFlag: --admin-socket names a socket elsewhere; without an
// answering socket the command fails at once with store_in_use.
func TestAdminSocketFlag(t *testing.T) {
	db := storeWithSamples(t)
	sock := filepath.Join(t.TempDir(), "agent.sock")
	holdStore(t, db, sock)
	failsWith(t, "store_in_use", "ls", "--db", db)
	if r := mustRun(t, "ls", "--db", db, "--admin-socket", sock); !strings.Contains(r.stderr, viaAgent) {
		t.Fatalf("--admin-socket not used: %s", r.stderr)
	}
}

// TestRevocationReachesARunningAgent: a revocation imported while an agent
// holds the store goes through its admin socket and fails the named bundle
// closed in the agent's store at once (threat: a site that must stop its
// agents to apply a revocation, and so delays it); applied again it
// changes nothing; a tampered copy is refused and changes nothing.
func TestRevocationReachesARunningAgent(t *testing.T) {
	db := storeWithSamples(t)
	stmt := revokeTranslate(t)
	s := holdStore(t, db, admin.SocketPath(db))
	data, err := os.ReadFile(stmt)
	if err != nil {
		t.Fatal(err)
	}
	tampered := filepath.Join(t.TempDir(), "tampered.cbor")
	bad := append([]byte{}, data...)
	bad[len(bad)-3] ^= 1
	os.WriteFile(tampered, bad, 0o600)
	if r := runCLI(t, nil, "import", tampered, "--db", db); r.code != 1 {
		t.Fatalf("a tampered statement through the agent: exit %d", r.code)
	}
	revoked := func() bool {
		bs, err := s.Bundles()
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range bs {
			if b.BundleID == translateID {
				return b.Revoked != ""
			}
		}
		t.Fatal("the bundle is gone")
		return false
	}
	if revoked() {
		t.Fatal("a refused statement failed the bundle closed")
	}
	r := mustRun(t, "import", stmt, "--db", db, "--json")
	if !strings.Contains(r.stderr, viaAgent) || !strings.Contains(r.stdout, translateID+"@1") {
		t.Fatalf("the revocation did not go through the agent: %s %s", r.stdout, r.stderr)
	}
	if !revoked() {
		t.Fatal("the running agent's store does not fail the revoked bundle closed")
	}
	if r := mustRun(t, "import", stmt, "--db", db, "--json"); !strings.Contains(r.stdout, `"unchanged": true`) {
		t.Fatalf("applied again: %s", r.stdout)
	}
}

// TestSyncedRevocationReachesARunningAgent: ampbundle sync against a store
// a running agent holds applies the mirror's statements through the
// agent's admin socket (they used to be skipped, listed as none, until the
// agent was stopped): the revoked bundle fails closed in the agent's store.
func TestSyncedRevocationReachesARunningAgent(t *testing.T) {
	station := storeWithSamples(t)
	stmt := revokeTranslate(t)
	mustRun(t, "import", stmt, "--db", station)
	url := startMirrorCLI(t, station)
	db := storeWithSamples(t)
	s := holdStore(t, db, admin.SocketPath(db))
	code, rep := syncJSON(t, url, db)
	if code != 10 || len(rep.Statements) != 1 || rep.Statements[0].Outcome != mirror.OutcomeImported {
		t.Fatalf("sync through the agent: exit %d, statements %+v", code, rep.Statements)
	}
	bs, err := s.Bundles()
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bs {
		if b.BundleID == translateID && b.Revoked == "" {
			t.Fatal("the synced revocation did not reach the running agent's store")
		}
	}
	if code, rep := syncJSON(t, url, db); code != 0 || rep.Statements[0].Outcome != mirror.OutcomeCurrent {
		t.Fatalf("second sync: exit %d, %+v", code, rep.Statements)
	}
}

// TestTrustRmFailClosedReachesARunningAgent: trust rm --fail-closed while
// an agent holds the store goes through its admin socket (threat: an
// operator who must stop every agent to act on a compromised key): the
// agent's store fails the key's bundles closed at once.
func TestTrustRmFailClosedReachesARunningAgent(t *testing.T) {
	db := storeWithSamples(t)
	s := holdStore(t, db, admin.SocketPath(db))
	var out struct {
		FailedClosed []string `json:"failed_closed"`
	}
	r := mustRun(t, "trust", "rm", "example", "--db", db, "--fail-closed", "--json")
	if !strings.Contains(r.stderr, viaAgent) {
		t.Fatalf("trust rm --fail-closed did not go through the agent: %s", r.stderr)
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || strings.Join(out.FailedClosed, ",") != translateID+"@1" {
		t.Fatalf("output %s %v", r.stdout, err)
	}
	bs, err := s.Bundles()
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bs {
		if b.BundleID == translateID && b.Revoked == "" {
			t.Fatal("the running agent's store still uses the bundle")
		}
	}
}

// TestSyncThroughAnOlderAgentStillImportsBundles: an agent older than this
// ampbundle has no /v1/statements/* routes (404): a sync through its
// socket skips the mirror's statements, as such an agent always did, and
// still imports the bundles (threat: an upgrade of the timer's ampbundle
// before the agent is restarted stopping every sync).
func TestSyncThroughAnOlderAgentStillImportsBundles(t *testing.T) {
	station := storeWithSamples(t)
	mustRun(t, "import", translateVersion(t, 2), "--db", station)
	stmt := revokeTranslate(t)
	mustRun(t, "import", stmt, "--db", station)
	url := startMirrorCLI(t, station)

	db := storeWithSamples(t)
	// An agent from before the statement routes.
	s := holdStoreAsOlderAgent(t, db, func(path string) bool { return strings.HasPrefix(path, "/v1/statements/") })

	code, rep := syncJSON(t, url, db)
	if code != 10 || len(rep.Statements) != 0 {
		t.Fatalf("sync through an older agent: exit %d, statements %+v", code, rep.Statements)
	}
	bs, _ := s.Bundles()
	for _, b := range bs {
		if b.BundleID == translateID && b.Version != 2 {
			t.Fatalf("sync through an older agent: translate still at version %d (no bundle synced)", b.Version)
		}
	}
}

// viaAgentRun runs a command that must go through the agent's admin
// socket.
func viaAgentRun(t *testing.T, args ...string) result {
	t.Helper()
	r := mustRun(t, args...)
	if !strings.Contains(r.stderr, viaAgent) {
		t.Fatalf("%v did not go through the admin socket: %s", args, r.stderr)
	}
	return r
}

// TestTrustSettingsReachARunningAgent: thresholds (trust threshold, trust
// add --threshold), freshness bounds and heartbeat resets (trust
// freshness) and trust policy files (trust policy apply), given while an
// agent holds the store, go through its admin socket and change the
// agent's store at once (threat: an operator who must stop every agent to
// raise a threshold or bound staleness, and so puts it off); a refusal
// keeps its name and changes nothing; trust ls through the agent lists
// the thresholds as offline (it used to leave them out silently).
func TestTrustSettingsReachARunningAgent(t *testing.T) {
	db := storeWithSamples(t)
	s := holdStore(t, db, admin.SocketPath(db))
	thresholds := func() map[string]int {
		th, err := s.TrustThresholds()
		if err != nil {
			t.Fatal(err)
		}
		return th
	}

	viaAgentRun(t, "trust", "freshness", "--max-versions", "1", "--db", db)
	viaAgentRun(t, "trust", "freshness", "--scope", "org.example", "--max-age", "30d", "--db", db)
	pol, err := s.FreshnessPolicy()
	if err != nil || len(pol) != 2 || pol[0].Scope != "*" || pol[0].MaxVersions == nil || *pol[0].MaxVersions != 1 ||
		pol[1].Scope != "org.example" || pol[1].MaxAgeSeconds != 30*24*3600 {
		t.Fatalf("freshness policy after trust freshness through the agent: %+v %v", pol, err)
	}
	if r := viaAgentRun(t, "trust", "freshness", "--db", db); !strings.Contains(r.stdout, "*: at most 1 version(s)") {
		t.Fatalf("trust freshness through the agent lists:\n%s", r.stdout)
	}
	failsWith(t, "no_heartbeat", "trust", "freshness", "--reset", translateID, "--db", db)
	hb := filepath.Join(t.TempDir(), "hb.cbor")
	mustRun(t, "heartbeat", "-o", hb, "--bundle-id", translateID, "--version", "900", "--key", sampleKey(t, "example-publisher"), "--created", "2026-11-22T00:00:00Z")
	viaAgentRun(t, "import", hb, "--db", db)
	var reset struct {
		Forgotten uint64 `json:"forgotten_version"`
	}
	if err := json.Unmarshal([]byte(viaAgentRun(t, "trust", "freshness", "--reset", translateID, "--db", db, "--json").stdout), &reset); err != nil || reset.Forgotten != 900 {
		t.Fatalf("reset through the agent: %+v %v", reset, err)
	}

	viaAgentRun(t, "trust", "threshold", "org.example", "2", "--db", db)
	if th := thresholds(); th["org.example"] != 2 {
		t.Fatalf("thresholds after trust threshold through the agent: %v", th)
	}
	if r := viaAgentRun(t, "trust", "ls", "--db", db); !strings.Contains(r.stdout, "threshold org.example: 2 distinct trusted signatures") {
		t.Fatalf("trust ls through the agent leaves out the threshold:\n%s", r.stdout)
	}

	viaAgentRun(t, "trust", "rm", "acme", "--db", db)
	viaAgentRun(t, "trust", "add", samplePub("acme-publisher"), "--db", db, "--name", "acme", "--scope", "com.acme", "--threshold", "2")
	if th := thresholds(); th["com.acme"] != 2 {
		t.Fatalf("thresholds after trust add --threshold through the agent: %v", th)
	}
	// Out of range: refused as offline, and nothing trusted.
	failsWith(t, string(resolver.ErrInvalidTrust), "trust", "add", samplePub("acme-publisher"), "--db", db, "--name", "acme-2", "--scope", "com.acme2", "--threshold", "0")
	if keys, _ := s.TrustList(); len(keys) != 2 {
		t.Fatalf("a refused trust add --threshold trusted a key: %+v", keys)
	}

	example := filepath.Join("..", "..", "testdata", "trust-policy", "example.json")
	viaAgentRun(t, "trust", "policy", "apply", example, "--db", db)
	if th := thresholds(); th["org.example.bank"] != 3 {
		t.Fatalf("thresholds after trust policy apply through the agent: %v", th)
	}
	if keys, _ := s.TrustList(); len(keys) != 5 {
		t.Fatalf("keys after trust policy apply through the agent: %d, want 5", len(keys))
	}
	if err := s.VerifyAudit(); err != nil {
		t.Fatal(err)
	}
}

// TestTrustCommandsThroughAnOlderAgent: an agent older than the threshold
// and freshness routes (404) still lists its keys with trust ls, with a
// note that thresholds are not shown (not a store that seems to have
// none), and trust threshold is refused as unsupported, changing nothing.
func TestTrustCommandsThroughAnOlderAgent(t *testing.T) {
	db := storeWithSamples(t)
	s := holdStoreAsOlderAgent(t, db, func(path string) bool {
		switch path {
		case "/v1/trust/thresholds", "/v1/trust/chains", "/v1/trust/threshold", "/v1/trust/policy", "/v1/freshness", "/v1/freshness/reset":
			return true
		}
		return false
	})

	r := viaAgentRun(t, "trust", "ls", "--db", db)
	if !strings.Contains(r.stdout, exampleDID) || !strings.Contains(r.stderr, "does not list its thresholds") {
		t.Fatalf("trust ls through an older agent:\nstdout %s\nstderr %s", r.stdout, r.stderr)
	}
	failsWith(t, string(resolver.ErrUnsupported), "trust", "threshold", "org.example", "2", "--db", db)
	if th, _ := s.TrustThresholds(); len(th) != 0 {
		t.Fatalf("thresholds changed through an older agent: %v", th)
	}
}

// TestStatementsAndHeartbeatsFlowBetweenRunningAgents: a station whose
// store a running agent holds still serves its statements and heartbeats
// through the mirror (it used to serve none of them then), and a host
// whose store another agent holds takes both through that agent's admin
// socket (threat: a revocation or a freshness signal stopping at the
// station because agents run there, so that every host keeps using a
// revoked or frozen bundle): the revoked key's bundle and the stale
// bundle fail closed in the host agent's store.
func TestStatementsAndHeartbeatsFlowBetweenRunningAgents(t *testing.T) {
	station := storeWithSamples(t)
	mustRun(t, "import", revokeTranslate(t), "--db", station)
	hb := filepath.Join(t.TempDir(), "hb.cbor")
	mustRun(t, "heartbeat", "-o", hb, "--bundle-id", geoID, "--version", "9", "--key", sampleKey(t, "acme-publisher"), "--created", "2026-11-22T00:00:00Z")
	mustRun(t, "import", hb, "--db", station)
	holdStore(t, station, admin.SocketPath(station))
	url := startMirrorCLI(t, station)

	db := storeWithSamples(t)
	mustRun(t, "trust", "freshness", "--max-versions", "1", "--db", db)
	s := holdStore(t, db, admin.SocketPath(db))
	code, rep := syncJSON(t, url, db)
	if code != 10 || len(rep.Statements) != 1 || rep.Statements[0].Outcome != mirror.OutcomeImported ||
		len(rep.Heartbeats) != 1 || rep.Heartbeats[0].Outcome != mirror.OutcomeImported || rep.Heartbeats[0].Stale == "" {
		t.Fatalf("sync between running agents: exit %d, statements %+v, heartbeats %+v", code, rep.Statements, rep.Heartbeats)
	}
	bs, err := s.Bundles()
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bs {
		switch b.BundleID {
		case translateID:
			if b.Revoked == "" {
				t.Error("the revocation did not reach the host agent's store")
			}
		case geoID:
			if b.Stale == "" {
				t.Error("the heartbeat did not make the frozen bundle stale in the host agent's store")
			}
		}
	}
	if code, rep := syncJSON(t, url, db); code != 0 || rep.Heartbeats[0].Outcome != mirror.OutcomeCurrent {
		t.Fatalf("second sync: exit %d, heartbeats %+v", code, rep.Heartbeats)
	}
}

package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/agent"
	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/internal/cliutil"
	"github.com/ampbundle/ampbundle/keyfile"
)

// TestDemo runs the demo as a user would: exit 0, a transcript that shows
// each outcome, and nothing left behind.
func TestDemo(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	start := time.Now()
	r := runCLI(t, "", "demo")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	t.Logf("the demo took %v", time.Since(start))
	for _, want := range []string{
		"[1] build the sample bundle", "bundle_id org.example.translate, version 1",
		"[3] a paged query", "2.1.0, 2.0.0; next_cursor", "1.5.0, 1.0.0; no next_cursor",
		"[4] an encrypted invocation", "agent ran: org.example.translate.text:2.1.0", `"text":"[fr] hello, world"`,
		"4004 SCHEMA_VIOLATION", `"instance_location":"/target"`,
		"3001 UNAUTHORIZED",
		"byte-identical", "the handler ran once",
		"5002 UNAVAILABLE",
		"every step behaved as shown",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("transcript lacks %q", want)
		}
	}
	if strings.Contains(r.stdout, "[FAIL]") {
		t.Errorf("a check failed:\n%s", r.stdout)
	}
	if got := strings.Count(r.stdout, "[ok]"); got < 20 {
		t.Errorf("only %d checks passed", got)
	}
	m := regexp.MustCompile(`in (\S+ampagent-demo-\S+)\n`).FindStringSubmatch(r.stdout)
	if m == nil || !strings.HasPrefix(m[1], tmp) {
		t.Fatalf("no temporary folder under TMPDIR in the transcript:\n%s", r.stdout)
	}
	if _, err := os.Stat(m[1]); !os.IsNotExist(err) {
		t.Errorf("the temporary folder is still there: %v", err)
	}
	if t.Failed() {
		t.Log(r.stdout)
	}
}

// TestDemoJSON: one document, every step ok, signed with a key made for
// the run.
func TestDemoJSON(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	r := runCLI(t, "", "demo", "--json", "--keep")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	var doc struct {
		OK    bool   `json:"ok"`
		Dir   string `json:"dir"`
		Steps []struct {
			Number  int            `json:"number"`
			Name    string         `json:"name"`
			OK      bool           `json:"ok"`
			Checks  []demoCheck    `json:"checks"`
			Details map[string]any `json:"details"`
		} `json:"steps"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	if !doc.OK || len(doc.Steps) != 10 {
		t.Fatalf("ok %v, %d steps", doc.OK, len(doc.Steps))
	}
	for _, s := range doc.Steps {
		if !s.OK || (s.Number < 10 && len(s.Checks) == 0) {
			t.Errorf("step %d %q: ok %v, %d checks", s.Number, s.Name, s.OK, len(s.Checks))
		}
	}
	// The publisher key was made for this run: 0600 in the kept folder,
	// and none of the repository's TEST-ONLY keys.
	st, err := os.Stat(filepath.Join(doc.Dir, demoKeyFile))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key in the kept folder: %v %v", st, err)
	}
	signer, _ := doc.Steps[0].Details["signer"].(string)
	for _, k := range testOnlyKeys(t) {
		if strings.Contains(signer, amp.DIDKey(k.Public().(ed25519.PublicKey))) {
			t.Errorf("the demo signed with a TEST-ONLY key: %s", signer)
		}
	}
	if !strings.HasPrefix(signer, "did:key:") {
		t.Errorf("signer %q", signer)
	}
	for _, f := range []string{"translate.ampb", "store.db"} {
		if _, err := os.Stat(filepath.Join(doc.Dir, f)); err != nil {
			t.Error(err)
		}
	}
	if r := runCLI(t, "", "demo", "extra"); r.code != 2 {
		t.Fatalf("demo with an argument: exit %d", r.code)
	}
}

// TestDemoBuildsTheCommittedSample: given the sample's own TEST-ONLY key,
// the demo builds byte for byte the committed translate.ampb (same source,
// key and created_at): what it shows is the real build.
func TestDemoBuildsTheCommittedSample(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	data, err := os.ReadFile(filepath.Join(samplesDir, "keys", "TEST-ONLY-example-publisher.key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	keys, err := keyfile.ParsePrivate(data)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	env := &cliutil.Env{Stdout: &out, Stderr: io.Discard, Now: testNow, Rand: rand.Reader}
	d := &demo{env: env, ctx: context.Background(), t: &transcript{w: &out}, publisher: keys.Ed25519}
	if err := d.run(false); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	sample, err := os.ReadFile(filepath.Join(samplesDir, "translate.ampb"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(sample)
	if got := d.t.steps[0].Details["sha256"]; got != hex.EncodeToString(sum[:]) {
		t.Errorf("built bundle sha256 %v, the committed sample has %x", got, sum)
	}
}

// TestDemoNoticesFailure: an agent that lets anyone in fails step 6, and
// the demo says so and exits 1.
func TestDemoNoticesFailure(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	var out bytes.Buffer
	env := &cliutil.Env{Stdout: &out, Stderr: io.Discard, Now: testNow, Rand: rand.Reader}
	d := &demo{env: env, ctx: context.Background(), t: &transcript{w: &out},
		tweak: func(c *agent.Config) { c.Policy = agent.Rules{{Caller: "*", Prefix: "*"}} }}
	err := d.run(false)
	if err == nil || !strings.Contains(err.Error(), "step 6") {
		t.Fatalf("err %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "[FAIL] 6.") || !strings.Contains(out.String(), "[ok]   7.") {
		t.Fatalf("transcript:\n%s", out.String())
	}
	if testing.Verbose() {
		t.Log(out.String())
	}
}

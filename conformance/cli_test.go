package conformance

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// buildCLI builds cmd/ampbundle into a temporary folder and returns its path.
func buildCLI(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the CLI")
	}
	bin := filepath.Join(t.TempDir(), "ampbundle")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/ampbundle")
	cmd.Dir = ".."
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// runAllowFail runs the CLI and returns its stdout and exit code.
func runAllowFail(t *testing.T, bin string, args ...string) (string, int) {
	t.Helper()
	c := exec.Command(bin, args...)
	var out bytes.Buffer
	c.Stdout = &out
	err := c.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return out.String(), ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), 0
}

// runner returns a function that runs the CLI and fails the test unless it
// exits 0.
func runner(t *testing.T, bin string) func(args ...string) string {
	t.Helper()
	return func(args ...string) string {
		t.Helper()
		c := exec.Command(bin, args...)
		var out, errb bytes.Buffer
		c.Stdout, c.Stderr = &out, &errb
		if err := c.Run(); err != nil {
			t.Fatalf("ampbundle %s: %v\n%s%s", strings.Join(args, " "), err, out.String(), errb.String())
		}
		return out.String()
	}
}

func readFile(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// didOf returns the did:key keygen printed.
func didOf(t *testing.T, out string) string {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		if d, ok := strings.CutPrefix(l, "did: "); ok {
			return strings.TrimSpace(d)
		}
	}
	t.Fatalf("no did in keygen output %q", out)
	return ""
}

// refusesEveryFlip flips one byte at each of several offsets spread over the
// file and requires verify to refuse every copy, so a check that passes
// whatever the bytes are cannot hide here.
func refusesEveryFlip(t *testing.T, what string, file []byte, verify func([]byte) error) {
	t.Helper()
	if err := verify(file); err != nil {
		t.Fatalf("%s: the untampered file is refused: %v", what, err)
	}
	step := len(file)/97 + 1
	n := 0
	for off := 0; off < len(file); off += step {
		c := bytes.Clone(file)
		c[off] ^= 0x01
		if verify(c) == nil {
			t.Errorf("%s: a flip at byte %d of %d is accepted", what, off, len(file))
		}
		n++
	}
	c := bytes.Clone(file)
	c[len(c)-1] ^= 0x80 // the last byte: in the last signature or artifact
	if verify(c) == nil {
		t.Errorf("%s: a flip of the last byte is accepted", what)
	}
	if n < 10 {
		t.Fatalf("%s: only %d flips tried", what, n)
	}
}

// TestCLIOutputsMatchFormatDocByIndependentVerifier runs the publisher and
// operator workflow with the real CLI and checks each file it writes with the
// verifier of this package (docs/FORMAT.md §2, §20, §21, §22), then checks that
// tampered copies are refused.
func TestCLIOutputsMatchFormatDocByIndependentVerifier(t *testing.T) {
	bin := buildCLI(t)
	run := runner(t, bin)
	dir := t.TempDir()
	p := func(n string) string { return filepath.Join(dir, n) }
	did := map[string]string{}
	for _, k := range []string{"a", "b", "c", "site"} {
		did[k] = didOf(t, run("keygen", "-o", p(k+".pem"), "--pub", p(k+".pub")))
		if _, err := didKeyToPub(did[k]); err != nil {
			t.Fatalf("keygen printed a did:key the doc's form does not decode: %v", err)
		}
	}
	src := filepath.Join("..", "testdata", "bundles", "translate")
	created := "2026-11-01T00:00:00Z"

	// §2 co-signing: the file is a function of the set of keys.
	run("build", src, "-o", p("ab.ampb"), "--key", p("a.pem"), "--key", p("b.pem"), "--created", created)
	run("build", src, "-o", p("ba.ampb"), "--key", p("b.pem"), "--key", p("a.pem"), "--created", created)
	run("build", src, "-o", p("a.ampb"), "--key", p("a.pem"), "--created", created)
	run("sign", p("a.ampb"), "--key", p("b.pem"), "-o", p("a+b.ampb"))
	ab := readFile(t, p("ab.ampb"))
	if !bytes.Equal(ab, readFile(t, p("ba.ampb"))) || !bytes.Equal(ab, readFile(t, p("a+b.ampb"))) {
		t.Fatal("build --key a --key b, build --key b --key a and build --key a + sign --key b differ (§2)")
	}
	vb, err := verifyBundle(ab)
	if err != nil {
		t.Fatalf("bundle by a and b: %v", err)
	}
	want := []string{did["a"], did["b"]}
	if did["b"] < did["a"] {
		want = []string{did["b"], did["a"]}
	}
	if strings.Join(vb.cose.kids, ",") != strings.Join(want, ",") {
		t.Fatalf("kids %v, want the two signers sorted bytewise %v", vb.cose.kids, want)
	}
	// sign changes nothing but the signatures array: the one-signature
	// bundle's artifact bytes are the same and its item 0 differs only there.
	single := readFile(t, p("a.ampb"))
	vs, err := verifyBundle(single)
	if err != nil {
		t.Fatalf("bundle by a: %v", err)
	}
	if !bytes.Equal(vs.cose.payload, vb.cose.payload) || !bytes.Equal(single[len(vs.item0):], ab[len(vb.item0):]) {
		t.Fatal("sign changed the manifest or the artifacts (§2)")
	}
	bundleID, _ := vb.manifest["bundle_id"].(string)
	if vb.manifest["publisher"] == "" || bundleID == "" || vb.artifacts == 0 {
		t.Fatalf("manifest %v", vb.manifest)
	}
	refusesEveryFlip(t, "bundle", ab, func(b []byte) error { _, err := verifyBundle(b); return err })

	// §12: a delta of version 2 (one schema changed) against ab.ampb.
	src2 := filepath.Join(dir, "src2")
	if err := os.CopyFS(src2, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	bj := readFile(t, filepath.Join(src2, "bundle.json"))
	bj = bytes.Replace(bj, []byte(`"version": 1`), []byte(`"version": 2`), 1)
	if err := os.WriteFile(filepath.Join(src2, "bundle.json"), bj, 0o644); err != nil {
		t.Fatal(err)
	}
	schemas, _ := filepath.Glob(filepath.Join(src2, "schemas", "common", "*.json"))
	if len(schemas) < 2 {
		t.Fatalf("sample source has %d schemas", len(schemas))
	}
	sc := append(readFile(t, schemas[0]), '\n')
	if err := os.WriteFile(schemas[0], sc, 0o644); err != nil {
		t.Fatal(err)
	}
	run("build", src2, "-o", p("v2.delta.ampb"), "--key", p("a.pem"), "--key", p("b.pem"), "--created", "2026-11-02T00:00:00Z", "--base", p("ab.ampb"))
	run("build", src2, "-o", p("v2.ampb"), "--key", p("a.pem"), "--key", p("b.pem"), "--created", "2026-11-02T00:00:00Z")
	delta := readFile(t, p("v2.delta.ampb"))
	hdr, dv, err := verifyDelta(delta)
	if err != nil {
		t.Fatalf("delta: %v", err)
	}
	full, err := verifyBundle(readFile(t, p("v2.ampb")))
	if err != nil {
		t.Fatalf("version 2: %v", err)
	}
	base, _ := hdr["base"].(map[any]any)
	om, _ := hdr["omitted"].([]any)
	if !bytes.Equal(dv.item0, full.item0) || !bytes.Equal(bs(base["manifest_sha256"]), sha256Of(vb.item0)) ||
		base["version"] != uint64(1) || len(om) != vb.artifacts-1 {
		t.Fatalf("delta header %v does not name the base ab.ampb, carry version 2's item 0 and omit all but the changed schema", hdr)
	}
	refusesEveryFlip(t, "delta", delta, func(b []byte) error { _, _, err := verifyDelta(b); return err })

	// §13: the part index of the full version 2 file.
	run("split", p("v2.ampb"), "--size", "64K", "--key", p("a.pem"), "--out-dir", dir)
	idx := readFile(t, p("v2.ampb.parts"))
	part1 := readFile(t, p("v2.ampb.part001"))
	pi, err := verifyPartIndex(idx, [][]byte{part1})
	if err != nil {
		t.Fatalf("part index: %v", err)
	}
	if pi["name"] != "v2.ampb" || pi["bundle_id"] != bundleID || pi["version"] != uint64(2) || !bytes.Equal(part1, readFile(t, p("v2.ampb"))) {
		t.Fatalf("part index %v", pi)
	}
	refusesEveryFlip(t, "part index", idx, func(b []byte) error { _, err := verifyPartIndex(b, [][]byte{part1}); return err })

	// Operator: a and b trusted with threshold 2, the bundle imported.
	db := p("store.db")
	run("trust", "add", p("a.pub"), "--db", db, "--name", "officer-a", "--scope", "org.example", "--threshold", "2")
	run("trust", "add", p("b.pub"), "--db", db, "--name", "officer-b", "--scope", "org.example")
	run("import", p("ab.ampb"), "--db", db)

	// §22: statement 1 adds c, statement 2 retires b; both signed by the
	// threshold as it is before them.
	run("rotate", "-o", p("s1.cbor"), "--scope", "org.example", "--key", p("a.pem"), "--key", p("b.pem"),
		"--add", "officer-c="+p("c.pub"), "--threshold", "2", "--created", created)
	run("import", p("s1.cbor"), "--db", db)
	run("rotate", "-o", p("s2.cbor"), "--scope", "org.example", "--key", p("a.pem"), "--key", p("c.pem"),
		"--after", p("s1.cbor"), "--retire", p("b.pub"), "--threshold", "2", "--created", created)
	run("import", p("s2.cbor"), "--db", db)
	s1, s2 := readFile(t, p("s1.cbor")), readFile(t, p("s2.cbor"))
	cs1, m1, err := verifyTrustStatement(s1, nil)
	if err != nil {
		t.Fatalf("statement 1: %v", err)
	}
	if m1["sequence"] != uint64(1) || m1["scope"] != "org.example" || m1["threshold"] != uint64(2) || len(cs1.kids) != 2 {
		t.Fatalf("statement 1 fields %v", m1)
	}
	if add, _ := m1["add"].([]any); len(add) != 1 || add[0].(map[any]any)["key"] != did["c"] || add[0].(map[any]any)["name"] != "officer-c" {
		t.Fatalf("statement 1 add %v", m1["add"])
	}
	_, m2, err := verifyTrustStatement(s2, s1)
	if err != nil {
		t.Fatalf("statement 2: %v", err)
	}
	if r, _ := m2["retire"].([]any); m2["sequence"] != uint64(2) || len(r) != 1 || r[0] != did["b"] {
		t.Fatalf("statement 2 fields %v", m2)
	}
	if _, _, err := verifyTrustStatement(s2, ab); err == nil {
		t.Fatal("statement 2 chains to a file it does not name")
	}
	refusesEveryFlip(t, "trust statement", s2, func(b []byte) error { _, _, err := verifyTrustStatement(b, s1); return err })

	// §21: a and c revoke the installed version.
	run("revoke", "-o", p("rev.cbor"), "--scope", "org.example", "--key", p("c.pem"), "--key", p("a.pem"),
		"--revoke-bundle", bundleID+"@1", "--revoke-key", did["b"], "--created", created)
	run("import", p("rev.cbor"), "--db", db)
	rev := readFile(t, p("rev.cbor"))
	csr, mr, err := verifyRevocation(rev)
	if err != nil {
		t.Fatalf("revocation: %v", err)
	}
	if k, _ := mr["keys"].([]any); len(csr.kids) != 2 || len(k) != 1 || k[0] != did["b"] {
		t.Fatalf("revocation fields %v", mr)
	}
	if bs, _ := mr["bundles"].([]any); len(bs) != 1 || bs[0].(map[any]any)["bundle_id"] != bundleID || bs[0].(map[any]any)["version"] != uint64(1) {
		t.Fatalf("revocation bundles %v", mr["bundles"])
	}
	refusesEveryFlip(t, "revocation", rev, func(b []byte) error { _, _, err := verifyRevocation(b); return err })

	// §20: the receipt of the whole log, signed by the site key.
	run("receipt", "--db", db, "--key", p("site.pem"), "-o", p("r.receipt"))
	rc := readFile(t, p("r.receipt"))
	ents, err := verifyReceipt(rc, did["site"])
	if err != nil {
		t.Fatalf("receipt: %v", err)
	}
	var actions []string
	for _, e := range ents {
		actions = append(actions, e["action"].(string))
	}
	wantActions := "trust_add,trust_threshold,trust_add,import,rotate,rotate,revoke"
	t.Logf("receipt: %d entries %v; bundle %s: %d artifacts, signers %v", len(ents), actions, bundleID, vb.artifacts, vb.cose.kids)
	if got := strings.Join(actions, ","); got != wantActions {
		t.Fatalf("receipt actions %s, want %s", got, wantActions)
	}
	for _, e := range ents {
		switch e["action"] {
		case "import":
			fh := sha256Of(ab)
			mh := sha256Of(vb.item0)
			if !bytes.Equal(bs(e["file_sha256"]), fh) || !bytes.Equal(bs(e["manifest_sha256"]), mh) || e["bundle_id"] != bundleID {
				t.Errorf("import entry %v does not name the file and item 0 imported", e)
			}
		case "rotate":
			if e["sequence"] == nil {
				t.Errorf("rotate entry without sequence: %v", e)
			}
		case "revoke":
			if rk, _ := e["revoked_keys"].([]any); len(rk) != 1 || rk[0] != did["b"] {
				t.Errorf("revoke entry %v", e)
			}
		}
	}
	if _, err := verifyReceipt(rc, did["a"]); err == nil {
		t.Fatal("a receipt verified against a site key that did not sign it")
	}
	refusesEveryFlip(t, "receipt", rc, func(b []byte) error { _, err := verifyReceipt(b, did["site"]); return err })
	checkStatementReaderAgrees(t, bin, db, s2, loadKey(t, p("a.pem")), loadKey(t, p("c.pem")), loadKey(t, p("site.pem")))
	checkReceiptReaderAgrees(t, bin, rc, loadKey(t, p("site.pem")), loadKey(t, p("a.pem")), p("site.pub"))
}

// TestTrustPolicyWrittenFromTheDocIsApplied writes trust policy files from
// docs/FORMAT.md ("Trust policy files") alone: a well-formed one is applied
// and the store then trusts exactly what it says; one with a member twice,
// an unknown member, or a threshold its keys cannot reach is refused
// (invalid_policy) and leaves no store behind.
func TestTrustPolicyWrittenFromTheDocIsApplied(t *testing.T) {
	bin := buildCLI(t)
	dir := t.TempDir()
	k1 := pubToDidKey(ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, 32)).Public().(ed25519.PublicKey))
	k2 := pubToDidKey(ed25519.NewKeyFromSeed(bytes.Repeat([]byte{8}, 32)).Public().(ed25519.PublicKey))
	policy := func(extra, threshold string) string {
		return `{"format": "ampbundle-trust-policy/1",` + extra + `
  "keys": [{"name": "one", "key": "` + k1 + `", "scopes": ["org.example."]},
           {"name": "two", "key": "` + k2 + `", "scopes": ["org.example", "com.acme"]}],
  "thresholds": {"org.example": ` + threshold + `}}`
	}
	cases := []struct {
		name, doc, want string
	}{
		{"MemberTwice", policy(` "format": "ampbundle-trust-policy/1",`, "2"), "invalid_policy"},
		{"UnknownMember", policy(` "comment": "x",`, "2"), "invalid_policy"},
		{"UnreachableThreshold", policy("", "3"), "invalid_policy"},
		{"WellFormed", policy("", "2"), ""},
	}
	for _, tc := range cases {
		db := filepath.Join(dir, tc.name+".db")
		f := filepath.Join(dir, tc.name+".json")
		if err := os.WriteFile(f, []byte(tc.doc), 0o644); err != nil {
			t.Fatal(err)
		}
		out, code := runAllowFail(t, bin, "trust", "policy", "apply", f, "--db", db, "--json")
		if tc.want != "" {
			if code != 1 || !strings.Contains(out, `"code":"`+tc.want+`"`) && !strings.Contains(out, `"code": "`+tc.want+`"`) {
				t.Fatalf("%s: exit %d %s, the document says %s", tc.name, code, out, tc.want)
			}
			if _, err := os.Stat(db); err == nil {
				t.Fatalf("%s: a refused policy left a store behind", tc.name)
			}
			continue
		}
		if code != 0 {
			t.Fatalf("%s: refused a policy the document allows: %s", tc.name, out)
		}
		ls, _ := runAllowFail(t, bin, "trust", "ls", "--db", db, "--json")
		var got struct {
			Keys []struct {
				Name   string   `json:"name"`
				Key    string   `json:"key"`
				Scopes []string `json:"scopes"`
			} `json:"keys"`
			Thresholds map[string]int `json:"thresholds"`
		}
		if err := json.Unmarshal([]byte(ls), &got); err != nil {
			t.Fatalf("trust ls --json printed %q", ls)
		}
		byName := map[string]string{}
		for _, k := range got.Keys {
			byName[k.Name] = k.Key + " " + strings.Join(k.Scopes, ",")
		}
		if len(got.Keys) != 2 || byName["one"] != k1+" org.example" || byName["two"] != k2+" com.acme,org.example" || got.Thresholds["org.example"] != 2 {
			t.Fatalf("%s: the store trusts %v, thresholds %v", tc.name, byName, got.Thresholds)
		}
	}
}

package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/internal/cliutil"
)

// run is main without the process: tests call it with their own Env.
func run(ctx context.Context, env *cliutil.Env, args []string) int {
	return cliutil.Run(ctx, newApp(env), env, args)
}

type result struct {
	code           int
	stdout, stderr string
}

func runCLI(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	env := &cliutil.Env{
		Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errb,
		Now: func() time.Time { return time.UnixMilli(1707055260000) }, Rand: rand.Reader,
		Getenv: func(string) string { return "" },
	}
	code := run(context.Background(), env, append([]string{"ampagent"}, args...))
	return result{code, out.String(), errb.String()}
}

// errorDoc parses the --json error document and returns code and amp_code.
func errorDoc(t *testing.T, r result) (string, int) {
	t.Helper()
	var doc struct {
		Error struct {
			Code    string `json:"code"`
			AMPCode int    `json:"amp_code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("stdout is not the error document: %v\n%s", err, r.stdout)
	}
	if doc.Error.Message == "" {
		t.Fatalf("error document without a message: %s", r.stdout)
	}
	return doc.Error.Code, doc.Error.AMPCode
}

type vector struct {
	Output struct {
		Message   string `json:"message"`
		Signature string `json:"signature"`
	} `json:"output"`
	Message string `json:"message"`
}

func loadVector(t *testing.T, name string) vector {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "vectors", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var v vector
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

const a1Pub = "03a107bff3ce10be1d70dd18e74bc09967e4d6309ba50d5f1ddc8664125531b8"

// TestMsgVerifyA2 is the acceptance check: A.2 verifies with the A.1
// key inside its validity window (exit 0); a flipped signature bit is 1002
// (tampering); --now past ts+ttl is 1003 (a stale message).
func TestMsgVerifyA2(t *testing.T) {
	a2 := loadVector(t, "a2-message-null-body")
	good := writeFile(t, "a2.hex", a2.Output.Message)
	raw, _ := hex.DecodeString(a2.Output.Message)
	sig, _ := hex.DecodeString(a2.Output.Signature)
	i := bytes.Index(raw, sig)
	flipped := append([]byte{}, raw...)
	flipped[i+10] ^= 0x04
	bad := writeFile(t, "flipped.hex", hex.EncodeToString(flipped))

	if r := runCLI(t, "", "msg", "verify", "--hex", good, "--pub", a1Pub, "--now", "1707055260000"); r.code != 0 {
		t.Fatalf("valid A.2: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r := runCLI(t, "", "msg", "verify", "--hex", bad, "--pub", a1Pub, "--now", "1707055260000", "--json")
	if code, amp := errorDoc(t, r); r.code != 1 || amp != 1002 || code != "invalid_signature" {
		t.Fatalf("flipped bit: exit %d, %s %d", r.code, code, amp)
	}
	// Flags after the positional argument mean the same (docs/CLI.md).
	r = runCLI(t, "", "msg", "verify", good, "--hex", "--json", "--pub", a1Pub, "--now", "1707141600001")
	if code, amp := errorDoc(t, r); r.code != 1 || amp != 1003 || code != "expired" {
		t.Fatalf("past ts+ttl: exit %d, %s %d", r.code, code, amp)
	}
	// Raw bytes on stdin.
	if r := runCLI(t, string(raw), "msg", "verify", "-", "--pub", a1Pub, "--now", "1707055260000", "--json"); r.code != 0 || !strings.Contains(r.stdout, `"valid": true`) {
		t.Fatalf("stdin: exit %d %s %s", r.code, r.stdout, r.stderr)
	}
}

func TestMsgVerifyEncryptedA6(t *testing.T) {
	a6 := writeFile(t, "a6.hex", loadVector(t, "a6-encrypted-authcrypt").Output.Message)
	published := writeFile(t, "pub.hex", loadVector(t, "a6-published-ciphertext").Message)
	args := []string{"--pub", a1Pub, "--now", "1707055260000",
		"--x25519-seed", "1f1e1d1c1b1a191817161514131211100f0e0d0c0b0a09080706050403020100",
		"--sender-x25519", "46d09ef40df38265c53eb1e834cab2eff2dda6e85866e5a0706348400502f27f", "--json"}
	r := runCLI(t, "", append([]string{"msg", "verify", "--hex", a6}, args...)...)
	if r.code != 0 || !strings.Contains(r.stdout, `"msg": "secret"`) {
		t.Fatalf("A.6 corrected: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = runCLI(t, "", append([]string{"msg", "verify", "--hex", published}, args...)...)
	if _, amp := errorDoc(t, r); r.code != 1 || amp != 3001 {
		t.Fatalf("A.6 as published: exit %d amp %d", r.code, amp)
	}
	// With the DID document instead of bare keys.
	doc := filepath.Join("..", "..", "testdata", "vectors", "dids", "alice.did.json")
	r = runCLI(t, "", "msg", "verify", "--hex", a6, "--did-doc", doc, "--now", "1707055260000",
		"--x25519-seed", "1f1e1d1c1b1a191817161514131211100f0e0d0c0b0a09080706050403020100")
	if r.code != 0 {
		t.Fatalf("A.6 with did doc: exit %d %s", r.code, r.stderr)
	}
}

func TestMsgVerifyUsage(t *testing.T) {
	a2 := writeFile(t, "a2.hex", loadVector(t, "a2-message-null-body").Output.Message)
	for name, args := range map[string][]string{
		"no key for a did:web sender": {"msg", "verify", "--hex", a2},
		"two key sources":             {"msg", "verify", "--hex", a2, "--pub", a1Pub, "--pub-file", a2},
		"short pub":                   {"msg", "verify", "--hex", a2, "--pub", "abcd"},
		"unknown flag after the file": {"msg", "verify", a2, "--hex", "--pub", a1Pub, "--frobnicate"},
		"no file":                     {"msg", "verify", "--hex"},
		"two files":                   {"msg", "verify", "--hex", a2, a2, "--pub", a1Pub},
	} {
		t.Run(name, func(t *testing.T) {
			r := runCLI(t, "", args...)
			if r.code != 2 {
				t.Fatalf("exit %d, want 2 (usage)\n%s%s", r.code, r.stdout, r.stderr)
			}
		})
	}
	// Not hex at all is a failure of the input, not of the usage.
	r := runCLI(t, "", "msg", "verify", "--hex", writeFile(t, "x", "zz"), "--pub", a1Pub, "--json")
	if code, amp := errorDoc(t, r); r.code != 1 || amp != 1001 || code != "invalid_hex" {
		t.Fatalf("non-hex: exit %d %s %d", r.code, code, amp)
	}
}

func TestMsgInspect(t *testing.T) {
	a4 := writeFile(t, "a4.hex", loadVector(t, "a4-ack").Output.Message)
	r := runCLI(t, "", "msg", "inspect", a4, "--hex")
	if r.code != 0 {
		t.Fatalf("exit %d %s", r.code, r.stderr)
	}
	var in map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &in); err != nil {
		t.Fatal(err)
	}
	if in["typ_name"] != "ACK" || in["reply_to"] != "0000018d746b37000000000000000001" || in["body"].(map[string]any)["ack_source"] != "recipient" {
		t.Fatalf("inspection %v", in)
	}
	r = runCLI(t, "", "msg", "inspect", "--json", writeFile(t, "bad", "not cbor"))
	if code, amp := errorDoc(t, r); r.code != 1 || amp != 1001 {
		t.Fatalf("garbage: exit %d %s %d", r.code, code, amp)
	}
}

// TestKeygen: the identity file is 0600 with two PKCS#8 blocks, is never
// overwritten, and a copy readable by others is refused (leaked key).
func TestKeygen(t *testing.T) {
	dir := t.TempDir()
	key := filepath.Join(dir, "agent.pem")
	r := runCLI(t, "", "keygen", "-o", key, "--json")
	if r.code != 0 {
		t.Fatalf("exit %d %s", r.code, r.stderr)
	}
	var out struct {
		DID string          `json:"did"`
		Doc json.RawMessage `json:"did_document"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || !strings.HasPrefix(out.DID, "did:key:z6Mk") {
		t.Fatalf("output %s %v", r.stdout, err)
	}
	if !strings.Contains(string(out.Doc), "keyAgreement") {
		t.Fatalf("did document without key agreement: %s", out.Doc)
	}
	st, err := os.Stat(key)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode %v %v", st.Mode(), err)
	}
	data, _ := os.ReadFile(key)
	if strings.Count(string(data), "-----BEGIN PRIVATE KEY-----") != 2 {
		t.Fatalf("want two PKCS#8 blocks:\n%s", data)
	}
	if r := runCLI(t, "", "keygen", "-o", key); r.code != 1 {
		t.Fatalf("overwrite: exit %d", r.code)
	}
	for _, args := range [][]string{{"keygen"}, {"frobnicate"}, {}, {"msg"}, {"msg", "nope"}} {
		if r := runCLI(t, "", args...); r.code != 2 {
			t.Fatalf("%v: exit %d, want 2", args, r.code)
		}
	}
	// The key file works as the recipient key of msg verify; made readable
	// by others it is refused.
	leaky := filepath.Join(dir, "leaky.pem")
	os.WriteFile(leaky, data, 0o644)
	os.Chmod(leaky, 0o644)
	a2 := writeFile(t, "a2.hex", loadVector(t, "a2-message-null-body").Output.Message)
	r = runCLI(t, "", "msg", "verify", "--hex", a2, "--pub", a1Pub, "--now", "1707055260000", "--x25519-key", leaky, "--json")
	if code, _ := errorDoc(t, r); r.code != 1 || code != "insecure_key_file" {
		t.Fatalf("group-readable key: exit %d %s", r.code, code)
	}
	if r := runCLI(t, "", "msg", "verify", "--hex", a2, "--pub", a1Pub, "--now", "1707055260000", "--x25519-key", key); r.code != 0 {
		t.Fatalf("0600 key: exit %d %s", r.code, r.stderr)
	}
}

package main

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/a2acard"
	"github.com/ampbundle/ampbundle/amp"
)

// a2aVerifyDoc is the --json document of 'card verify'.
type a2aVerifyDoc struct {
	Valid  bool     `json:"valid"`
	KID    string   `json:"kid"`
	Name   string   `json:"name"`
	Skills []string `json:"skills"`
}

// TestA2ACardListsTheServedCapabilitiesAndVerifies: the card printed by
// 'card --a2a' verifies with the agent's did:key, lists one skill per
// served version (every installed one, or those with a handler in
// --config), and the same file fails once a skill is changed.
func TestA2ACardListsTheServedCapabilitiesAndVerifies(t *testing.T) {
	db := cardStore(t, true)
	key, did := keygen(t, t.TempDir(), "agent.key")
	r := runCLI(t, "", "card", "--db", db, "--key", key, "--a2a", "--url", "https://agent.example/amp")
	if r.code != 0 {
		t.Fatalf("exit %d: %s %s", r.code, r.stdout, r.stderr)
	}
	card := writeFile(t, "card.json", r.stdout)
	r = runCLI(t, "", "card", "verify", card, "--key", did, "--json")
	var v a2aVerifyDoc
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil || r.code != 0 || !v.Valid {
		t.Fatalf("exit %d: %s %s", r.code, r.stdout, r.stderr)
	}
	if v.KID != did+"#"+strings.TrimPrefix(did, "did:key:") || len(v.Skills) != 4 || v.Skills[3] != "org.example.translate.text:2.1.0" {
		t.Fatalf("verified %+v", v)
	}
	r = runCLI(t, "", "card", "verify", card, "--key", did)
	if r.code != 0 || !strings.HasPrefix(r.stdout, "valid: signed by "+did) {
		t.Fatalf("human: exit %d: %s", r.code, r.stdout)
	}

	cfg := writeFile(t, "config.json", `{"handlers": {"org.example.translate.text:2.1.0": {"command": ["/bin/true"]}}}`)
	r = runCLI(t, "", "card", "--db", db, "--key", key, "--a2a", "--url", "https://agent.example/amp", "--config", cfg)
	if r.code != 0 {
		t.Fatalf("with --config: exit %d: %s", r.code, r.stderr)
	}
	one := writeFile(t, "one.json", r.stdout)
	r = runCLI(t, "", "card", "verify", one, "--key", did, "--json")
	v = a2aVerifyDoc{}
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil || len(v.Skills) != 1 || v.Skills[0] != "org.example.translate.text:2.1.0" {
		t.Fatalf("with --config: exit %d: %s %s", r.code, r.stdout, r.stderr)
	}

	raw, _ := os.ReadFile(card)
	tampered := bytes.Replace(raw, []byte(`"adds formality"`), []byte(`"adds formality and uploads the text"`), 1)
	if bytes.Equal(raw, tampered) {
		t.Fatal("the card has no skill to tamper with")
	}
	r = runCLI(t, "", "card", "verify", writeFile(t, "t.json", string(tampered)), "--key", did, "--json")
	if code, _ := errorDoc(t, r); r.code != 1 || code != string(a2acard.ErrBadSignature) {
		t.Fatalf("tampered skill: exit %d: %s", r.code, r.stdout)
	}
}

// TestA2ACardOfADIDWebAgentNamesItsKeyID: a did:web agent signs under the
// key id it is given, and a verifier must name that kid.
func TestA2ACardOfADIDWebAgentNamesItsKeyID(t *testing.T) {
	db := cardStore(t, true)
	key, did := keygen(t, t.TempDir(), "agent.key")
	kid := "did:web:agent.example#key-1"
	r := runCLI(t, "", "card", "--db", db, "--key", key, "--did", "did:web:agent.example", "--kid", kid, "--a2a", "--url", "https://agent.example/amp")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	card := writeFile(t, "card.json", r.stdout)
	if r = runCLI(t, "", "card", "verify", card, "--key", did, "--kid", kid); r.code != 0 {
		t.Fatalf("with --kid: exit %d: %s", r.code, r.stderr)
	}
	r = runCLI(t, "", "card", "verify", card, "--key", did, "--json")
	if code, _ := errorDoc(t, r); r.code != 1 || code != string(a2acard.ErrKidMismatch) {
		t.Fatalf("without --kid: exit %d: %s", r.code, r.stdout)
	}
}

// TestA2ACardVerifyRefusesHostileFilesByNameWithoutEchoing: exit 1 with
// the precise name under --json, the card's text never in the output,
// and a card over the bound refused unread.
func TestA2ACardVerifyRefusesHostileFilesByNameWithoutEchoing(t *testing.T) {
	_, did := keygen(t, t.TempDir(), "agent.key")
	const marker = `\u001b]0;MARKER\u0007` // JSON-escaped terminal title
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"malformed", []byte(`{"name":"` + marker), string(a2acard.ErrMalformed)},
		{"duplicate", []byte(`{"name":"a","name":"` + marker + `"}`), string(a2acard.ErrDuplicateMember)},
		{"unsigned", []byte(`{"name":"` + marker + `"}`), string(a2acard.ErrUnsigned)},
		{"oversized", append([]byte(`{"name":"`+marker+`"`), bytes.Repeat([]byte(" "), a2acard.MaxCardBytes+10)...), string(a2acard.ErrTooLarge)},
		{"oversized by one", append([]byte(`{}`), bytes.Repeat([]byte(" "), a2acard.MaxCardBytes-1)...), string(a2acard.ErrTooLarge)},
	} {
		for _, asJSON := range []bool{true, false} {
			args := []string{"card", "verify", writeFile(t, "c.json", string(tc.data)), "--key", did}
			if asJSON {
				args = append(args, "--json")
			}
			r := runCLI(t, "", args...)
			if r.code != 1 || strings.Contains(r.stdout+r.stderr, "MARKER") {
				t.Fatalf("%s: exit %d: %q %q", tc.name, r.code, r.stdout, r.stderr)
			}
			if !asJSON {
				continue
			}
			if code, _ := errorDoc(t, r); code != tc.want {
				t.Fatalf("%s: code %s, want %s", tc.name, code, tc.want)
			}
		}
	}
}

// TestA2ACardUsageAndEmptyAgent: wrong flag combinations are usage errors
// (exit 2), and an agent serving nothing gets no card (exit 1, nothing on
// stdout without --json).
func TestA2ACardUsageAndEmptyAgent(t *testing.T) {
	db := cardStore(t, true)
	key, did := keygen(t, t.TempDir(), "agent.key")
	u := "https://agent.example/amp"
	for _, args := range [][]string{
		{"--a2a", "--url", u},
		{"--a2a", "--key", key},
		{"--a2a", "--key", key, "--url", "ftp://agent.example/"},
		{"--a2a", "--key", key, "--url", u, "--transfer", "org.example.translate.text:2.1.0"},
		{"--a2a", "--key", key, "--url", u, "--did", "did:web:agent.example"},
		{"--a2a", "--key", key, "--url", u, "--did", "did:web:agent.example", "--kid", "did:web:other.example#k"},
		{"--url", u},
	} {
		r := runCLI(t, "", append([]string{"card", "--db", db}, args...)...)
		if r.code != 2 || r.stdout != "" {
			t.Fatalf("%v: exit %d: %s", args, r.code, r.stdout)
		}
	}
	for _, args := range [][]string{{"card", "verify", "--key", did}, {"card", "verify", "x.json"}} {
		if r := runCLI(t, "", args...); r.code != 2 {
			t.Fatalf("%v: exit %d", args, r.code)
		}
	}
	r := runCLI(t, "", "card", "--db", cardStore(t, false), "--key", key, "--a2a", "--url", u)
	if r.code != 1 || r.stdout != "" || !strings.Contains(r.stderr, "serves no capability") {
		t.Fatalf("empty store: exit %d: %q %q", r.code, r.stdout, r.stderr)
	}
}

// TestA2ACardVerifyRefusesAnAttackersKeyUnderTheVictimsDIDKeyKid: a card
// an attacker signed with their own key under the victim's did:key kid,
// checked with the attacker's key and the victim's kid, must not print
// "valid: signed by did:key:<victim>": a did:key kid is its key
// (card_kid_mismatch, exit 1; docs/SPEC-DECISIONS.md A2A-11).
func TestA2ACardVerifyRefusesAnAttackersKeyUnderTheVictimsDIDKeyKid(t *testing.T) {
	_, victim := keygen(t, t.TempDir(), "victim.key")
	victimKid := victim + "#" + strings.TrimPrefix(victim, "did:key:")
	attacker := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{0xa5}, ed25519.SeedSize))
	card, err := a2acard.New(a2acard.Options{Name: "ampagent", Version: "1.0.0", URL: "https://agent.example/amp"},
		[]a2acard.Served{{ID: "x:1.0.0", Name: "x", Version: "1.0.0"}})
	if err != nil {
		t.Fatal(err)
	}
	payload, _ := a2acard.Payload(card)
	h, _ := a2acard.ProtectedHeader(victimKid)
	prot := base64.RawURLEncoding.EncodeToString(h)
	sig := ed25519.Sign(attacker, []byte(prot+"."+base64.RawURLEncoding.EncodeToString(payload)))
	card.Signatures = []a2acard.Signature{{Protected: prot, Signature: base64.RawURLEncoding.EncodeToString(sig)}}
	data, _ := json.Marshal(card)
	file := writeFile(t, "card.json", string(data))
	attackerDID := amp.DIDKey(attacker.Public().(ed25519.PublicKey))
	r := runCLI(t, "", "card", "verify", file, "--key", attackerDID, "--kid", victimKid, "--json")
	if code, _ := errorDoc(t, r); r.code != 1 || code != string(a2acard.ErrKidMismatch) {
		t.Fatalf("exit %d: %s: the attacker's card is reported as the victim's", r.code, r.stdout)
	}
	r = runCLI(t, "", "card", "verify", file, "--key", attackerDID, "--kid", victimKid)
	if r.code != 1 || strings.Contains(r.stdout, "valid") {
		t.Fatalf("human: exit %d: %q", r.code, r.stdout)
	}
}

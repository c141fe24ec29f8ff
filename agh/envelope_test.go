package agh

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
)

var envNow = time.Unix(1776366061, 0)

func clock() time.Time { return envNow }

func testKey(b byte) ed25519.PrivateKey { return ed25519.NewKeyFromSeed(bytes.Repeat([]byte{b}, 32)) }

func envOpts() EnvelopeOptions {
	return EnvelopeOptions{Now: clock, Rand: bytes.NewReader(bytes.Repeat([]byte{7}, 64))}
}

func recvOpts() ReceiveOptions { return ReceiveOptions{Now: clock} }

// signed returns a transfer of the page's build-site record signed by key.
func signed(t *testing.T, key ed25519.PrivateKey) []byte {
	t.Helper()
	env, err := TransferEnvelope(pageCatalog()[0], &Signer{Key: key}, "", envOpts())
	if err != nil {
		t.Fatal(err)
	}
	return env
}

func members(t *testing.T, env []byte) map[string]json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(env, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// resign sets members of env, then signs it again with key under keyID
// (no proof when key is nil).
func resign(t *testing.T, env []byte, set map[string]string, key ed25519.PrivateKey, keyID string) []byte {
	t.Helper()
	m := members(t, env)
	for k, v := range set {
		if v == "" {
			delete(m, k)
		} else {
			m[k] = json.RawMessage(v)
		}
	}
	if key != nil {
		in, err := signingInput(m)
		if err != nil {
			t.Fatal(err)
		}
		p, _ := json.Marshal(map[string]string{"type": ProofType, "key": keyID, "sig": base64.RawURLEncoding.EncodeToString(ed25519.Sign(key, in))})
		m["proof"] = p
	}
	out, _ := json.Marshal(m)
	return out
}

func keyID(key ed25519.PrivateKey) string {
	did := amp.DIDKey(key.Public().(ed25519.PublicKey))
	return did + "#" + strings.TrimPrefix(did, "did:key:")
}

func quote(s string) string { b, _ := json.Marshal(s); return string(b) }

func TestSignedTransferIsAcceptedAndAgreesWithTheRichCatalog(t *testing.T) {
	key := testKey(1)
	env := signed(t, key)
	m := members(t, env)
	for _, k := range []string{"protocol", "id", "kind", "channel", "from", "ts", "body", "proof"} {
		if m[k] == nil {
			t.Fatalf("envelope lacks %s: %s", k, env)
		}
	}
	tr, err := ReceiveTransfer(env, recvOpts())
	if err != nil {
		t.Fatal(err)
	}
	rich, _ := RichCatalog(pageCatalog(), WhoisRequest{Rich: true}, 0)
	if !tr.Verified || tr.From != amp.DIDKey(key.Public().(ed25519.PublicKey)) || tr.KeyID != keyID(key) ||
		tr.Capability.Digest != rich.Capabilities[0].Digest || tr.TS != envNow.Unix() {
		t.Fatalf("transfer %+v", tr)
	}
}

// A relay or attacker who changes any signed member — the capability with
// its digest recomputed, the target, an unknown member — is caught by the
// proof even though the capability's own digest still verifies.
func TestForgedTransferContentFailsTheProof(t *testing.T) {
	env := signed(t, testKey(1))
	other, _ := TransferBody(Capability{ID: "build-site", Summary: "Run my script.", Outcome: "A finished landing page."})
	for name, set := range map[string]map[string]string{
		"capability swapped": {"body": string(other)},
		"to added":           {"to": `"victim"`},
		"unknown member":     {"x.note": `1`},
		"ts moved":           {"ts": "1776366060"},
	} {
		t.Run(name, func(t *testing.T) {
			bad := resign(t, env, set, nil, "")
			if _, err := ReceiveTransfer(bad, recvOpts()); errName(err) != string(ErrBadProof) {
				t.Fatalf("got %v, want bad_proof", err)
			}
		})
	}
	// A flipped signature byte.
	m := members(t, env)
	var p map[string]string
	json.Unmarshal(m["proof"], &p)
	sig, _ := base64.RawURLEncoding.DecodeString(p["sig"])
	sig[0] ^= 1
	p["sig"] = base64.RawURLEncoding.EncodeToString(sig)
	m["proof"], _ = json.Marshal(p)
	bad, _ := json.Marshal(m)
	if _, err := ReceiveTransfer(bad, recvOpts()); errName(err) != string(ErrBadProof) {
		t.Fatalf("flipped signature: %v", err)
	}
}

// An agent cannot make a transfer pass as another's: a proof by its own
// key under the victim's from is sender_mismatch; a proof claiming a key
// fragment the victim's DID does not have is unknown_sender; its own
// signature under the victim's key id is bad_proof.
func TestImpersonationOfAnotherSenderIsRefused(t *testing.T) {
	victim, attacker := testKey(1), testKey(2)
	victimDID := amp.DIDKey(victim.Public().(ed25519.PublicKey))
	env := signed(t, attacker)
	cases := []struct {
		name  string
		keyID string
		want  amp.ErrName
	}{
		{"own key, victim's from", keyID(attacker), ErrSenderMismatch},
		{"own key fragment under the victim's DID", victimDID + "#" + strings.TrimPrefix(amp.DIDKey(attacker.Public().(ed25519.PublicKey)), "did:key:"), ErrUnknownSender},
		{"victim's key id, own signature", keyID(victim), ErrBadProof},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			bad := resign(t, env, map[string]string{"from": quote(victimDID)}, attacker, c.keyID)
			_, err := ReceiveTransfer(bad, recvOpts())
			if errName(err) != string(c.want) {
				t.Fatalf("got %v, want %s", err, c.want)
			}
			if strings.Contains(err.Error(), victimDID) {
				t.Fatalf("error echoes the peer's from: %v", err)
			}
		})
	}
}

// A recorded transfer replayed later than the accepted age, or one dated
// ahead of the clock beyond the skew, is refused; the bounds themselves
// are accepted.
func TestReplayedStaleOrFutureDatedTransferIsRefused(t *testing.T) {
	key := testKey(1)
	env := signed(t, key)
	cases := []struct {
		name string
		at   time.Time
		want amp.ErrName
	}{
		{"at the max age", envNow.Add(DefaultMaxAge), ""},
		{"past the max age", envNow.Add(DefaultMaxAge + time.Second), ErrStaleTimestamp},
		{"at the skew", envNow.Add(-DefaultSkew), ""},
		{"beyond the skew", envNow.Add(-DefaultSkew - time.Second), ErrFutureTimestamp},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ReceiveTransfer(env, ReceiveOptions{Now: func() time.Time { return c.at }})
			if errName(err) != string(c.want) {
				t.Fatalf("got %v, want %q", err, c.want)
			}
		})
	}
	exp := resign(t, env, map[string]string{"expires_at": "1776366000"}, key, keyID(key))
	if _, err := ReceiveTransfer(exp, recvOpts()); errName(err) != string(ErrExpired) {
		t.Fatalf("expired: %v", err)
	}
}

// Envelopes of another protocol version or of a kind that is not a
// transfer are refused before anything else is read.
func TestUnknownProtocolOrKindIsRefused(t *testing.T) {
	key := testKey(1)
	env := signed(t, key)
	for _, c := range []struct {
		set  map[string]string
		want amp.ErrName
	}{
		{map[string]string{"protocol": `"agh-network/v1"`}, ErrUnsupportedProtocol},
		{map[string]string{"protocol": `"<script>"`}, ErrUnsupportedProtocol},
		{map[string]string{"protocol": ""}, ErrInvalidEnvelope},
		{map[string]string{"kind": `"whois"`}, ErrUnsupportedKind},
		{map[string]string{"kind": `"capability/v2"`}, ErrUnsupportedKind},
		{map[string]string{"kind": `7`}, ErrInvalidEnvelope},
	} {
		bad := resign(t, env, c.set, key, keyID(key))
		_, err := ReceiveTransfer(bad, recvOpts())
		if errName(err) != string(c.want) || strings.Contains(err.Error(), "script") {
			t.Errorf("%v: got %v, want %s", c.set, err, c.want)
		}
	}
}

// Stripping the proof is a downgrade: refused unless the receiver accepts
// the seed's unverified mode, and then only from a sender that is no DID
// (AGH-12), reported as unverified. A proof of another shape or type is
// never taken for no proof.
func TestStrippedOrMalformedProofIsRefused(t *testing.T) {
	key := testKey(1)
	env := signed(t, key)
	for _, stripped := range []map[string]string{{"proof": "null"}, {"proof": ""}} {
		bad := resign(t, env, stripped, nil, "")
		if _, err := ReceiveTransfer(bad, recvOpts()); errName(err) != string(ErrMissingProof) {
			t.Fatalf("stripped proof: %v", err)
		}
		if _, err := ReceiveTransfer(bad, ReceiveOptions{Now: clock, AllowUnverified: true}); errName(err) != string(ErrMissingProof) {
			t.Fatalf("a DID sender's stripped proof under AllowUnverified: %v", err)
		}
		seed := resign(t, bad, map[string]string{"from": `"designer.session-19"`}, nil, "")
		tr, err := ReceiveTransfer(seed, ReceiveOptions{Now: clock, AllowUnverified: true})
		if err != nil || tr.Verified || tr.KeyID != "" {
			t.Fatalf("unverified under AllowUnverified: %+v %v", tr, err)
		}
	}
	ok := members(t, env)["proof"]
	for _, c := range []struct {
		proof string
		want  amp.ErrName
	}{
		{`"sig"`, ErrInvalidProof},
		{`{"type":"jws","key":"k","sig":"s"}`, ErrUnsupportedProof},
		{`{"key":"k","sig":"s"}`, ErrInvalidProof},
		{strings.Replace(string(ok), `"sig":"`, `"sig":"AA`, 1), ErrInvalidProof},
		{strings.Replace(string(ok), `"key":"`, `"extra":1,"key":"`, 1), ErrInvalidProof},
		{strings.Replace(string(ok), `"key":"did:`, `"key":"not-a-did:`, 1), ErrInvalidProof},
	} {
		bad := resign(t, env, map[string]string{"proof": c.proof}, nil, "")
		if _, err := ReceiveTransfer(bad, ReceiveOptions{Now: clock, AllowUnverified: true}); errName(err) != string(c.want) {
			t.Errorf("proof %s: got %v, want %s", c.proof, err, c.want)
		}
	}
}

// A DID this receiver cannot resolve gives no key to trust: refused, and
// a resolver, when given, is what decides.
func TestProofByUnresolvableSenderIsRefused(t *testing.T) {
	key := testKey(3)
	did := "did:web:agent.example"
	env, err := TransferEnvelope(pageCatalog()[0], &Signer{DID: did, Key: key}, "", envOpts())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ReceiveTransfer(env, recvOpts()); errName(err) != string(ErrUnknownSender) {
		t.Fatalf("no resolver: %v", err)
	}
	resolve := didsFunc(func(context.Context, string) (*amp.DIDDocument, error) { return webDocument(did, key), nil })
	tr, err := ReceiveTransfer(env, ReceiveOptions{Now: clock, DIDs: resolve})
	if err != nil || !tr.Verified || tr.KeyID != did+"#k1" {
		t.Fatalf("resolved: %+v %v", tr, err)
	}
}

// Peer-controlled members are typed and bounded before use, and a capability
// whose digest is wrong is refused even inside a valid proof.
func TestMalformedOrOversizedEnvelopeIsRefused(t *testing.T) {
	key := testKey(1)
	env := signed(t, key)
	badCap := `{"capability":{"id":"x","summary":"s","outcome":"o","digest":"sha256:00"}}`
	for _, c := range []struct {
		set  map[string]string
		want amp.ErrName
	}{
		{map[string]string{"id": ""}, ErrInvalidEnvelope},
		{map[string]string{"channel": `""`}, ErrInvalidEnvelope},
		{map[string]string{"from": quote(strings.Repeat("a", maxIDBytes+1))}, ErrInvalidEnvelope},
		{map[string]string{"ts": `1776366061.5`}, ErrInvalidEnvelope},
		{map[string]string{"ts": `"1776366061"`}, ErrInvalidEnvelope},
		{map[string]string{"ts": `1e9`}, ErrInvalidEnvelope},
		{map[string]string{"ts": `9007199254740993`}, ErrInvalidEnvelope},
		{map[string]string{"body": `[]`}, ErrInvalidEnvelope},
		{map[string]string{"body": `{"capability":"x"}`}, ErrInvalidEnvelope},
		{map[string]string{"ext": `[]`}, ErrInvalidEnvelope},
		{map[string]string{"to": `5`}, ErrInvalidEnvelope},
		{map[string]string{"body": badCap}, ErrVerificationFailed},
	} {
		bad := resign(t, env, c.set, key, keyID(key))
		if _, err := ReceiveTransfer(bad, recvOpts()); errName(err) != string(c.want) {
			t.Errorf("%v: got %v, want %s", c.set, err, c.want)
		}
	}
	dup := bytes.Replace(env, []byte(`{"body"`), []byte(`{"kind":"capability","body"`), 1)
	if _, err := ReceiveTransfer(dup, recvOpts()); errName(err) != string(ErrInvalidDocument) {
		t.Fatalf("duplicate member: %v", err)
	}
	if _, err := ReceiveTransfer(make([]byte, MaxDocumentBytes+1), recvOpts()); errName(err) != string(ErrTooLarge) {
		t.Fatalf("oversized: %v", err)
	}
}

// The served card has every member of the seed's example, with values true
// of what the agent does, and the served transfer is a signed envelope a
// receiver accepts.
func TestServedCardHasTheSeedMembersAndTransferIsSigned(t *testing.T) {
	key := testKey(4)
	h := NewHandler(HandlerOptions{
		Catalog: func() ([]Capability, error) { return pageCatalog(), nil },
		Signer:  &Signer{Key: key}, Now: clock, Rand: bytes.NewReader(bytes.Repeat([]byte{9}, 64)),
	})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", PeerCardPath, nil))
	got := members(t, rec.Body.Bytes())
	for k := range members(t, read(t, "peer-card.json")) {
		if got[k] == nil {
			t.Errorf("card lacks the seed's %s: %s", k, rec.Body)
		}
	}
	did := amp.DIDKey(key.Public().(ed25519.PublicKey))
	if string(got["peer_id"]) != quote(did) || string(got["trust_modes_supported"]) != `["unverified","`+ProofType+`"]` ||
		string(got["display_name"]) != quote(DefaultDisplayName) {
		t.Fatalf("card %s", rec.Body)
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", CapabilityPrefix+"build-site", nil))
	tr, err := ReceiveTransfer(rec.Body.Bytes(), recvOpts())
	if err != nil || !tr.Verified || tr.From != did || tr.Capability.ID != "build-site" {
		t.Fatalf("served transfer %s: %v", rec.Body, err)
	}
	// Without a signer the card claims only "unverified" and the transfer
	// carries proof null.
	h = NewHandler(HandlerOptions{Catalog: func() ([]Capability, error) { return pageCatalog(), nil },
		Card: map[string]json.RawMessage{"peer_id": json.RawMessage(`"p"`)}})
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", PeerCardPath, nil))
	if string(members(t, rec.Body.Bytes())["trust_modes_supported"]) != `["unverified"]` {
		t.Fatalf("unsigned card %s", rec.Body)
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", CapabilityPrefix+"build-site", nil))
	if _, err := ReceiveTransfer(rec.Body.Bytes(), ReceiveOptions{Now: time.Now, AllowUnverified: true}); err != nil {
		t.Fatalf("unsigned transfer %s: %v", rec.Body, err)
	}
}

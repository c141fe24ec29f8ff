package amp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// seedMessages returns every message found in the vector files.
func seedMessages(t testing.TB) [][]byte {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(vectorDir, "*.json"))
	var out [][]byte
	for _, f := range files {
		var v vectorFile
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if json.Unmarshal(data, &v) != nil {
			continue
		}
		for _, h := range []string{v.Output.Message, v.Message} {
			if h != "" {
				out = append(out, mustHex(t, h))
			}
		}
	}
	if len(out) < 8 {
		t.Fatalf("found %d seed messages in %s; the seed corpus must not be empty", len(out), vectorDir)
	}
	return out
}

func checkAMPError(t *testing.T, err error) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) || e.Code == 0 || e.Name == "" || e.Message == "" {
		t.Fatalf("error without a code, name and message: %#v", err)
	}
}

// FuzzReceive: decode and validate arbitrary bytes. No panic; every error
// carries a code; a success re-encodes to the deterministic form of the
// input (which is the input itself for every vector).
func FuzzReceive(f *testing.F) {
	for _, m := range seedMessages(f) {
		f.Add(m, int64(1707055260000))
	}
	env := loadVectorEnv(f)
	f.Fuzz(func(t *testing.T, data []byte, nowMS int64) {
		r, err := NewReceiver(ReceiverConfig{
			Now:           func() time.Time { return time.UnixMilli(nowMS) },
			DIDs:          env.resolver,
			AgreementKeys: []*AgreementKey{env.agree["did:web:example.com:agent:bob"]},
			Limits:        Limits{MaxMessageSize: 1 << 16},
		})
		if err != nil {
			t.Fatal(err)
		}
		m, err := r.Receive(context.Background(), data)
		if err != nil {
			checkAMPError(t, err)
			return
		}
		canon, err := Limits{}.Canonical(data)
		if err != nil {
			t.Fatalf("accepted a message that is not canonicalizable: %v", err)
		}
		if !bytes.Equal(m.Encode(), canon) {
			t.Fatalf("re-encoding changed the message:\n in %x\nout %x", canon, m.Encode())
		}
	})
}

// FuzzCanonical: the deterministic form is a fixed point, and decoding it
// never fails where the input decoded.
func FuzzCanonical(f *testing.F) {
	for _, m := range seedMessages(f) {
		f.Add(m)
	}
	for _, s := range []string{"1801", "a2626262016161 02", "c11b000000005f5e1000", "fb3ff8000000000000", "9f01ff", "a26161016161 02", "d9c350a140f4"} {
		f.Add(hx(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		out, err := Limits{}.Canonical(data)
		if err != nil {
			checkAMPError(t, err)
			return
		}
		again, err := Limits{}.Canonical(out)
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("canonical form is not a fixed point: %x -> %x (%v)", out, again, err)
		}
		if len(out) > len(data) {
			t.Fatalf("canonical form is longer than the input: %x -> %x", data, out)
		}
	})
}

// FuzzParseDIDDocument: no panic; errors carry codes; a parsed document
// survives a JSON round trip with the same key selection.
func FuzzParseDIDDocument(f *testing.F) {
	docs, _ := filepath.Glob(filepath.Join(vectorDir, "dids", "*.json"))
	if len(docs) == 0 {
		f.Fatal("no did documents to seed from")
	}
	for _, d := range docs {
		data, err := os.ReadFile(d)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(`{"id":"did:web:a.example","verificationMethod":[{"id":"#k","type":"Ed25519VerificationKey2018","controller":"did:web:a.example","publicKeyBase58":"8HH5gYEeNc3z7PYXmd54d4x6qAfCNrqQqEB3nS7Zfu7K"}],"authentication":["#k"]}`))
	f.Add([]byte(`{"id":"did:web:a.example","service":[{"id":"#r","type":"AgentMessagingRelay","serviceEndpoint":"did:web:relay.example"}]}`))
	f.Add([]byte(`{"id":"did:web:a.example","service":[{"id":"#r","type":["AgentMessagingRelay"],"serviceEndpoint":[{"uri":"did:web:relay.example","routingKeys":["did:web:m.example#k"]},"https://relay.example"]}]}`))
	now := time.Unix(1_800_000_000, 0)
	f.Fuzz(func(t *testing.T, data []byte) {
		doc, err := ParseDIDDocument(data)
		if err != nil {
			checkAMPError(t, err)
			return
		}
		js, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		back, err := ParseDIDDocument(js)
		if err != nil {
			t.Fatalf("own output does not parse: %v\n%s", err, js)
		}
		if strings.Join(doc.Relays, " ") != strings.Join(back.Relays, " ") {
			t.Fatalf("relays changed in a round trip: %v / %v", doc.Relays, back.Relays)
		}
		for _, r := range doc.Relays {
			if !ValidDID(r) || BareDID(r) != r {
				t.Fatalf("relay %q is not a bare did", r)
			}
		}
		a, errA := doc.SigningKey(doc.ID, now)
		b, errB := back.SigningKey(doc.ID, now)
		if (errA == nil) != (errB == nil) || a.ID != b.ID || !bytes.Equal(a.PublicKey, b.PublicKey) {
			t.Fatalf("signing key selection changed in a round trip: %v/%v %v/%v", a.ID, errA, b.ID, errB)
		}
	})
}

package amp

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"
)

// The RFC 001 Appendix A vectors live as files under testdata/vectors, each
// with its expected outcome. Positive vectors are rebuilt byte-for-byte from
// their values (body value -> body CBOR -> Sig_Input -> signature ->
// ciphertext -> message) and then received; negative vectors apply their
// mutation and expect their code.

const vectorDir = "../testdata/vectors"

type vectorKeys struct {
	Ed25519Seed      string            `json:"ed25519_seed"`
	Ed25519Pub       string            `json:"ed25519_pub"`
	DIDs             map[string]string `json:"dids"`
	AgreementPrivate map[string]string `json:"agreement_private"`
}

type vectorFile struct {
	Vector    string `json:"vector"`
	Title     string `json:"title"`
	Expect    string `json:"expect"`
	Code      Code   `json:"code"`
	Name      string `json:"name"`
	NowMS     int64  `json:"now_ms"`
	Recipient string `json:"recipient"`
	Base      string `json:"base"`
	Mutation  string `json:"mutation"`
	Message   string `json:"message"`
	Input     *struct {
		V       uint64          `json:"v"`
		ID      string          `json:"id"`
		Typ     uint64          `json:"typ"`
		TS      uint64          `json:"ts"`
		TTL     uint64          `json:"ttl"`
		From    string          `json:"from"`
		To      string          `json:"to"`
		ReplyTo string          `json:"reply_to"`
		Body    json.RawMessage `json:"body"`
		Encrypt *struct {
			Nonce string `json:"nonce"`
		} `json:"encrypt"`
	} `json:"input"`
	Output struct {
		BodyCBOR   string `json:"body_cbor"`
		SigInput   string `json:"sig_input"`
		Signature  string `json:"signature"`
		Ciphertext string `json:"ciphertext"`
		Message    string `json:"message"`
	} `json:"output"`
}

func mustHex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatalf("bad hex in vector: %v", err)
	}
	return b
}

func readJSON(t testing.TB, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// mapResolver is a DIDResolver over parsed documents.
type mapResolver map[string]*DIDDocument

func (m mapResolver) ResolveDID(_ context.Context, did string) (*DIDDocument, error) {
	if d, ok := m[did]; ok {
		return d, nil
	}
	return nil, errors.New("unknown did")
}

type vectorEnv struct {
	keys     vectorKeys
	signing  ed25519.PrivateKey
	resolver mapResolver
	agree    map[string]*AgreementKey
}

func loadVectorEnv(t testing.TB) *vectorEnv {
	t.Helper()
	env := &vectorEnv{resolver: mapResolver{}, agree: map[string]*AgreementKey{}}
	readJSON(t, filepath.Join(vectorDir, "keys-a1.json"), &env.keys)
	env.signing = ed25519.NewKeyFromSeed(mustHex(t, env.keys.Ed25519Seed))
	if got := hex.EncodeToString(env.signing.Public().(ed25519.PublicKey)); got != env.keys.Ed25519Pub {
		t.Fatalf("A.1 seed gives public key %s, want %s", got, env.keys.Ed25519Pub)
	}
	for did, file := range env.keys.DIDs {
		data, err := os.ReadFile(filepath.Join(vectorDir, file))
		if err != nil {
			t.Fatal(err)
		}
		doc, err := ParseDIDDocument(data)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		env.resolver[did] = doc
	}
	for did, priv := range env.keys.AgreementPrivate {
		var p [32]byte
		copy(p[:], mustHex(t, priv))
		k, err := NewAgreementKey(p)
		if err != nil {
			t.Fatal(err)
		}
		env.agree[did] = k
	}
	return env
}

func (env *vectorEnv) receiver(t testing.TB, recipient string, nowMS int64) *Receiver {
	t.Helper()
	var keys []*AgreementKey
	if k := env.agree["did:web:example.com:agent:"+recipient]; k != nil {
		keys = append(keys, k)
	}
	r, err := NewReceiver(ReceiverConfig{
		Now:           func() time.Time { return time.UnixMilli(nowMS) },
		DIDs:          env.resolver,
		AgreementKeys: keys,
	})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// typedJSON turns a vector body (JSON, with {"$bytes": hex} for byte
// strings and integers for uints) into the Go value to encode.
func typedJSON(t testing.TB, raw json.RawMessage) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	var conv func(any) any
	conv = func(v any) any {
		switch x := v.(type) {
		case json.Number:
			var u uint64
			if err := json.Unmarshal([]byte(x), &u); err != nil {
				t.Fatalf("vector number %s is not a uint", x)
			}
			return u
		case []any:
			out := make([]any, len(x))
			for i := range x {
				out[i] = conv(x[i])
			}
			return out
		case map[string]any:
			if h, ok := x["$bytes"].(string); ok && len(x) == 1 {
				return mustHex(t, h)
			}
			out := make(map[string]any, len(x))
			for k, e := range x {
				out[k] = conv(e)
			}
			return out
		}
		return v
	}
	return conv(v)
}

func loadVectors(t *testing.T) map[string]*vectorFile {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(vectorDir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*vectorFile{}
	for _, f := range files {
		if filepath.Base(f) == "keys-a1.json" {
			continue
		}
		var v vectorFile
		readJSON(t, f, &v)
		out[filepath.Base(f[:len(f)-len(".json")])] = &v
	}
	// A glob that matches nothing must fail, not pass vacuously.
	if len(out) < 12 {
		t.Fatalf("found %d vector files in %s, want the 7 positive and 6 negative RFC 001 Appendix A vectors", len(out), vectorDir)
	}
	return out
}

// buildVector reproduces a positive vector from its values and checks every
// intermediate against the file.
func buildVector(t *testing.T, env *vectorEnv, v *vectorFile) *Message {
	t.Helper()
	in := v.Input
	body, err := Marshal(typedJSON(t, in.Body))
	if err != nil {
		t.Fatal(err)
	}
	if got := hex.EncodeToString(body); got != v.Output.BodyCBOR {
		t.Fatalf("body cbor\n got %s\nwant %s", got, v.Output.BodyCBOR)
	}
	m := &Message{V: in.V, Type: Type(in.Typ), TS: in.TS, TTL: in.TTL, From: in.From, To: To(in.To), Body: body}
	copy(m.ID[:], mustHex(t, in.ID))
	if in.ReplyTo != "" {
		m.ReplyTo = mustHex(t, in.ReplyTo)
	}
	if err := Sign(m, env.signing); err != nil {
		t.Fatal(err)
	}
	if got := hex.EncodeToString(m.SigInput()); got != v.Output.SigInput {
		t.Fatalf("Sig_Input\n got %s\nwant %s", got, v.Output.SigInput)
	}
	if got := hex.EncodeToString(m.Sig); got != v.Output.Signature {
		t.Fatalf("signature\n got %s\nwant %s", got, v.Output.Signature)
	}
	if in.Encrypt != nil {
		var nonce [NonceSize]byte
		copy(nonce[:], mustHex(t, in.Encrypt.Nonce))
		sender := env.agree[in.From]
		recipient := env.agree[in.To].Public
		if err := Encrypt(m, sender, &recipient, &nonce, nil); err != nil {
			t.Fatal(err)
		}
		if got := hex.EncodeToString(m.Enc.Ciphertext); got != v.Output.Ciphertext {
			t.Fatalf("ciphertext\n got %s\nwant %s", got, v.Output.Ciphertext)
		}
	}
	if got := hex.EncodeToString(m.Encode()); got != v.Output.Message {
		t.Fatalf("message\n got %s\nwant %s", got, v.Output.Message)
	}
	return m
}

func TestRFC001AppendixAVectors(t *testing.T) {
	env := loadVectorEnv(t)
	vectors := loadVectors(t)
	names := make([]string, 0, len(vectors))
	for n := range vectors {
		names = append(names, n)
	}
	sort.Strings(names)
	positives := 0
	for _, name := range names {
		v := vectors[name]
		if v.Expect != "valid" {
			continue
		}
		positives++
		t.Run(name, func(t *testing.T) {
			built := buildVector(t, env, v)
			r := env.receiver(t, v.Recipient, v.NowMS)
			got, err := r.Receive(context.Background(), mustHex(t, v.Output.Message))
			if err != nil {
				t.Fatalf("receive: %v", err)
			}
			if !bytes.Equal(got.Body, built.Body) || got.ID != built.ID || got.Type != built.Type {
				t.Fatalf("received message differs from the one built")
			}
			// A success re-encodes to the same bytes.
			if !bytes.Equal(got.Encode(), mustHex(t, v.Output.Message)) {
				t.Fatalf("re-encoding the received message changed its bytes")
			}
		})
	}
	if positives != 7 {
		t.Fatalf("found %d positive vectors, want 7 (A.2, A.3, A.4, three A.5, A.6)", positives)
	}
}

// resign re-signs a decoded vector message after a mutation.
func resign(t *testing.T, env *vectorEnv, m *Message) []byte {
	t.Helper()
	if err := Sign(m, env.signing); err != nil {
		t.Fatal(err)
	}
	return m.Encode()
}

func expectCode(t *testing.T, err error, code Code, name string) {
	t.Helper()
	if err == nil {
		t.Fatalf("accepted; want %d %s", code, name)
	}
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v is not an *amp.Error", err)
	}
	if e.Code != code || (name != "" && string(e.Name) != name) {
		t.Fatalf("got %d %s (%v); want %d %s", e.Code, e.Name, err, code, name)
	}
}

func TestRFC001NegativeVectors(t *testing.T) {
	env := loadVectorEnv(t)
	vectors := loadVectors(t)
	ctx := context.Background()
	negatives := 0
	for name, v := range vectors {
		if v.Expect != "error" {
			continue
		}
		negatives++
		t.Run(v.Vector, func(t *testing.T) {
			recipient := v.Recipient
			var base *vectorFile
			var msg []byte
			if v.Base != "" {
				base = vectors[v.Base]
				if base == nil {
					t.Fatalf("%s: base vector %s not found", name, v.Base)
				}
				recipient = base.Recipient
				msg = mustHex(t, base.Output.Message)
			} else {
				msg = mustHex(t, v.Message)
			}
			r := env.receiver(t, recipient, v.NowMS)
			switch v.Mutation {
			case "", "none":
				_, err := r.Receive(ctx, msg)
				expectCode(t, err, v.Code, v.Name)
			case "flip_each_signature_bit":
				sigAt := bytes.Index(msg, mustHex(t, base.Output.Signature))
				for bit := 0; bit < 8*SigSize; bit++ {
					mut := append([]byte{}, msg...)
					mut[sigAt+bit/8] ^= 1 << (bit % 8)
					_, err := r.Receive(ctx, mut)
					expectCode(t, err, v.Code, v.Name)
				}
			case "flip_each_ciphertext_byte":
				ctAt := bytes.Index(msg, mustHex(t, base.Output.Ciphertext))
				for i := 0; i < len(base.Output.Ciphertext)/2; i++ {
					mut := append([]byte{}, msg...)
					mut[ctAt+i] ^= 0x01
					_, err := r.Receive(ctx, mut)
					expectCode(t, err, v.Code, v.Name)
				}
			case "typ_0x99_resigned":
				m, err := env.receiver(t, recipient, v.NowMS).Receive(ctx, msg)
				if err != nil {
					t.Fatal(err)
				}
				m.Type = 0x99
				_, err = r.Receive(ctx, resign(t, env, m))
				expectCode(t, err, v.Code, v.Name)
				// Not re-signed: typ is checked before the signature.
				m.Sig = mustHex(t, base.Output.Signature)
				_, err = r.Receive(ctx, m.Encode())
				expectCode(t, err, v.Code, v.Name)
			case "ack_source_relay_resigned":
				orig := vectors["a2-message-null-body"]
				m, err := r.Receive(ctx, msg)
				if err != nil {
					t.Fatal(err)
				}
				// The unmutated ACK is valid against the original message.
				if _, err := CheckAck(m, To(orig.Input.To), nil); err != nil {
					t.Fatalf("unmutated A.4 ack: %v", err)
				}
				b, err := DecodeAck(m.Body)
				if err != nil {
					t.Fatal(err)
				}
				b.AckSource = AckFromRelay
				if m.Body, err = Marshal(b); err != nil {
					t.Fatal(err)
				}
				// Not re-signed, the signature protects the body.
				_, err = r.Receive(ctx, m.Encode())
				expectCode(t, err, CodeInvalidSignature, "invalid_signature")
				got, err := r.Receive(ctx, resign(t, env, m))
				if err != nil {
					t.Fatalf("re-signed mutated ack: %v", err)
				}
				_, err = CheckAck(got, To(orig.Input.To), []string{"did:web:relay.example.com"})
				expectCode(t, err, v.Code, v.Name)
				// The same ACK from a configured relay is accepted.
				if _, err := CheckAck(got, To(orig.Input.To), []string{got.From}); err != nil {
					t.Fatalf("relay ack from a trusted relay: %v", err)
				}
			default:
				t.Fatalf("unknown mutation %q", v.Mutation)
			}
		})
	}
	if negatives != 6 {
		t.Fatalf("found %d negative vectors, want 6 (N1-N5 and the published A.6)", negatives)
	}
}

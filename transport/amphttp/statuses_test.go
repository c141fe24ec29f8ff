package amphttp

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
)

// verifier is a Handler that verifies each message the way an agent does
// (amp.Receiver: shape, time, sender key, signature) and answers a PING
// with a signed PONG; bytes that do not verify are an unverified error.
// It stands in for the agent where only the binding is under test.
type verifier struct {
	id, caller amp.Identity
	recv       *amp.Receiver
	send       *amp.Sender
}

func newIdentity(t *testing.T) amp.Identity {
	_, k, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return amp.Identity{DID: amp.DIDKey(k.Public().(ed25519.PublicKey)), SigningKey: k}
}

func newVerifier(t *testing.T) *verifier {
	v := &verifier{id: newIdentity(t), caller: newIdentity(t)}
	var err error
	if v.recv, err = amp.NewReceiver(amp.ReceiverConfig{Now: time.Now}); err != nil {
		t.Fatal(err)
	}
	if v.send, err = amp.NewSender(amp.SenderConfig{Identity: v.id, Rand: rand.Reader, Now: time.Now}); err != nil {
		t.Fatal(err)
	}
	return v
}

func (v *verifier) DID() string { return v.id.DID }

func (v *verifier) Handle(ctx context.Context, msg []byte) ([]byte, error) {
	m, err := v.recv.Receive(ctx, msg)
	if err != nil {
		return nil, unverified{amp.AsError(err)}
	}
	_, out, err := v.send.Seal(ctx, amp.Draft{Type: amp.TypePong, To: amp.To(m.From), ReplyTo: m.ID[:]})
	return out, err
}

// seal is a PING from the caller to the verifier.
func (v *verifier) seal(t *testing.T) (*amp.Message, []byte) {
	s, err := amp.NewSender(amp.SenderConfig{Identity: v.caller, Rand: rand.Reader, Now: time.Now})
	if err != nil {
		t.Fatal(err)
	}
	m, out, err := s.Seal(context.Background(), amp.Draft{Type: amp.TypePing, To: amp.To(v.id.DID)})
	if err != nil {
		t.Fatal(err)
	}
	return m, out
}

// TestHTTPStatuses: 413 without reading, 400 with a CBOR 1001 body, 405,
// 415, 404, healthz.
func TestHTTPStatuses(t *testing.T) {
	e := newVerifier(t)
	srv := httptest.NewServer(NewHandler(e, Options{MaxBody: 1 << 20}))
	defer srv.Close()
	url := srv.URL
	post := func(body io.Reader, ct string, length int64) (*http.Response, []byte) {
		req, _ := http.NewRequest(http.MethodPost, url+MessagesPath, body)
		req.Header.Set("Content-Type", ct)
		if length >= 0 {
			req.ContentLength = length
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, b
	}
	// 413 from Content-Length: the body is never sent in full.
	var sent atomic.Int64
	big := &countingReader{n: 64 << 20, sent: &sent}
	resp, body := post(big, ContentType, 64<<20)
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("oversized: %d", resp.StatusCode)
	}
	if sent.Load() > 8<<20 {
		t.Fatalf("the server read %d bytes of a refused body", sent.Load())
	}
	if eb, err := amp.DecodeError(body); err != nil || eb.Code != amp.CodeInvalidMessage {
		t.Fatalf("413 body: %v %v", eb, err)
	}
	// 413 for a streamed body without Content-Length.
	resp, _ = post(io.LimitReader(&countingReader{n: 2 << 20, sent: new(atomic.Int64)}, 2<<20), ContentType, -1)
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("chunked oversized: %d", resp.StatusCode)
	}
	// 400: bytes that name no sender.
	resp, body = post(strings.NewReader("not cbor at all"), ContentType, -1)
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("garbage: %d", resp.StatusCode)
	}
	if eb, err := amp.DecodeError(body); err != nil || eb.Code != amp.CodeInvalidMessage {
		t.Fatalf("400 body: %v %v", eb, err)
	}
	resp, _ = post(strings.NewReader("{}"), "application/json", -1)
	if resp.StatusCode != http.StatusUnsupportedMediaType {
		t.Fatalf("json: %d", resp.StatusCode)
	}
	for path, want := range map[string]int{MessagesPath: 405, "/nope": 404} {
		r, err := http.Get(url + path)
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
		if r.StatusCode != want {
			t.Fatalf("GET %s: %d", path, r.StatusCode)
		}
	}
	r, err := http.Get(url + HealthPath)
	if err != nil {
		t.Fatal(err)
	}
	var h map[string]any
	json.NewDecoder(r.Body).Decode(&h)
	r.Body.Close()
	if h["status"] != "ok" || h["did"] != e.DID() {
		t.Fatalf("healthz %v", h)
	}
	// A message whose signature does not verify gets an unsigned 400 with
	// a CBOR error body, never an ERROR signed for the claimed sender.
	req, msg := e.seal(t)
	bad := bytes.Replace(msg, req.Sig, make([]byte, 64), 1)
	resp, body = post(bytes.NewReader(bad), ContentType, -1)
	if eb, err := amp.DecodeError(body); resp.StatusCode != 400 || err != nil || eb.Code != amp.CodeInvalidSignature {
		t.Fatalf("forged message: %d %v", resp.StatusCode, err)
	}
}

type countingReader struct {
	n    int64
	sent *atomic.Int64
}

func (r *countingReader) Read(p []byte) (int, error) {
	if r.n <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > r.n {
		p = p[:r.n]
	}
	for i := range p {
		p[i] = 0xa1
	}
	r.n -= int64(len(p))
	r.sent.Add(int64(len(p)))
	return len(p), nil
}

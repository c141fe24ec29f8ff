package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/capability"
	"github.com/ampbundle/ampbundle/internal/cliutil"
	"github.com/ampbundle/ampbundle/internal/termtest"
	"github.com/ampbundle/ampbundle/transport/amphttp"
)

// hostileAgent is an agent over the HTTP binding that answers every message
// with what reply returns for it, signed by its did:key (so the replies
// verify: the agent itself is hostile, not a forger).
func hostileAgent(t *testing.T, reply func(m *amp.Message) amp.Draft) (url, did string) {
	t.Helper()
	k := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, 32))
	id := amp.Identity{DID: amp.DIDKey(k.Public().(ed25519.PublicKey)), SigningKey: k}
	recv, err := amp.NewReceiver(amp.ReceiverConfig{Now: testNow})
	if err != nil {
		t.Fatal(err)
	}
	send, err := amp.NewSender(amp.SenderConfig{Identity: id, Rand: rand.Reader, Now: testNow})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		m, err := recv.Receive(r.Context(), raw)
		if err != nil {
			http.Error(w, "bad message", http.StatusBadRequest)
			return
		}
		d := reply(m)
		d.To, d.ReplyTo = amp.To(m.From), m.ID[:]
		_, out, err := send.Seal(context.Background(), d)
		if err != nil {
			http.Error(w, "cannot seal", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", amphttp.ContentType)
		w.Write(out)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, id.DID
}

// errorReply is a signed ERROR with message msg and, when given, details.
func errorReply(t *testing.T, msg string, details any) amp.Draft {
	t.Helper()
	eb := amp.ErrorBody{Code: amp.CodeBadRequest, Category: amp.CodeBadRequest.Category(), Message: msg}
	if details != nil {
		d, err := amp.Marshal(details)
		if err != nil {
			t.Fatal(err)
		}
		eb.Details = d
	}
	body, err := amp.Marshal(eb)
	if err != nil {
		t.Fatal(err)
	}
	return amp.Draft{Type: amp.TypeError, Body: body}
}

// TestRemoteErrorCannotInjectTerminalSequences: the message of a signed
// ERROR reply, of an unsigned HTTP error body, of a failed CAP_RESULT, and
// the details a provider sends with an error, reach stderr escaped and
// bounded (threat: a hostile agent, or anyone on the path of a plain
// http:// URL, writing terminal sequences or fake lines to the caller's
// terminal).
func TestRemoteErrorCannotInjectTerminalSequences(t *testing.T) {
	dir := t.TempDir()
	key, _ := keygen(t, dir, "caller.pem")
	var payload string
	var shape string
	url, did := hostileAgent(t, func(m *amp.Message) amp.Draft {
		switch shape {
		case "details":
			return errorReply(t, "refused", map[string]any{"why": payload})
		case "failed result":
			body, err := capability.Result{Status: capability.StatusError,
				Error: &capability.ResultError{Code: amp.CodeBadRequest, Message: payload}}.Encode()
			if err != nil {
				t.Fatal(err)
			}
			return amp.Draft{Type: amp.TypeCapResult, Body: body}
		}
		return errorReply(t, payload, nil)
	})
	unsigned := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := amp.Marshal(amp.ErrorBody{Code: amp.CodeInvalidMessage, Category: amp.CodeInvalidMessage.Category(), Message: payload})
		w.Header().Set("Content-Type", amphttp.ContentType)
		w.WriteHeader(http.StatusBadRequest)
		w.Write(body)
	}))
	defer unsigned.Close()
	for _, p := range termtest.Payloads {
		if !utf8.ValidString(p.Text) {
			continue // CBOR text is UTF-8: decoding refuses the rest
		}
		payload = p.Text
		for _, shape = range []string{"signed ERROR", "details", "failed result", "unsigned HTTP error"} {
			target, to := url, did
			if shape == "unsigned HTTP error" {
				target = unsigned.URL
			}
			var r result
			if shape == "failed result" || shape == "details" { // invoke shows details as a hint
				r = runCLI(t, "", "invoke", target, "--key", key, "--to", to, "--id", "org.example.x:1.0.0", "--params", "{}")
			} else {
				r = runCLI(t, "", "query", target, "--key", key, "--to", to, "--capability", "org.example.x")
			}
			if r.code == 0 {
				t.Fatalf("%s, %s: exit 0: %+v", p.Name, shape, r)
			}
			termtest.Check(t, p.Name+", "+shape+", stderr", r.stderr, 4*cliutil.MaxShown)
			termtest.Check(t, p.Name+", "+shape+", stdout", r.stdout, 4*cliutil.MaxShown)
		}
	}
}

// TestDeclareCannotInjectTerminalSequences: the text fields of a
// CAP_DECLARE (a descriptor's notes and schema uri, next_cursor) are printed
// escaped and bounded by 'ampagent query'; with --json they stay whole, in
// JSON (threat: a hostile agent driving the terminal through its
// descriptors).
func TestDeclareCannotInjectTerminalSequences(t *testing.T) {
	dir := t.TempDir()
	key, _ := keygen(t, dir, "caller.pem")
	v, _ := capability.ParseVersion("1.0.0")
	var body []byte
	url, did := hostileAgent(t, func(m *amp.Message) amp.Draft {
		return amp.Draft{Type: amp.TypeCapDeclare, Body: body}
	})
	for _, p := range termtest.Payloads {
		if !utf8.ValidString(p.Text) {
			continue // CBOR text is UTF-8: decoding refuses the rest
		}
		for _, field := range []string{"notes", "uri", "next_cursor"} {
			d := capability.Descriptor{Name: "org.example.x", Version: v,
				InputSchema:  capability.SchemaRef{URI: "https://x.example/in", HashAlg: "sha-256", Hash: make([]byte, 32)},
				OutputSchema: capability.SchemaRef{URI: "https://x.example/out", HashAlg: "sha-256", Hash: make([]byte, 32)}}
			dec := capability.Declare{}
			switch field {
			case "notes":
				d.Notes = p.Text
			case "uri":
				d.InputSchema.URI = "https://x.example/" + p.Text
			case "next_cursor":
				dec.NextCursor = p.Text
			}
			dec.Capabilities = []capability.Descriptor{d}
			var err error
			if body, err = dec.Encode(); err != nil {
				t.Fatalf("%s in %s: %v", p.Name, field, err)
			}
			r := runCLI(t, "", "query", url, "--key", key, "--to", did, "--capability", "org.example.x")
			if r.code != 0 {
				t.Fatalf("%s in %s: exit %d %s", p.Name, field, r.code, r.stderr)
			}
			termtest.Check(t, p.Name+" in "+field, r.stdout+r.stderr, 8*cliutil.MaxShown)
			if !strings.Contains(r.stdout, "org.example.x:1.0.0") {
				t.Errorf("%s in %s: the descriptor is not shown: %q", p.Name, field, r.stdout)
			}
		}
	}
}

// TestResultCannotInjectTerminalSequences: a provider's result, and the
// body of a message file, are printed without --json as JSON whose C1 and
// bidi controls are escaped (encoding/json escapes the C0 ones), and which
// reads back as the same value (threat: a hostile provider, or a message
// file, driving the terminal of 'ampagent invoke' or 'ampagent msg').
func TestResultCannotInjectTerminalSequences(t *testing.T) {
	dir := t.TempDir()
	key, _ := keygen(t, dir, "caller.pem")
	var payload string
	url, did := hostileAgent(t, func(m *amp.Message) amp.Draft {
		res, err := amp.Marshal(map[string]any{"text": payload})
		if err != nil {
			t.Fatal(err)
		}
		body, err := capability.Result{Status: capability.StatusSuccess, Result: res}.Encode()
		if err != nil {
			t.Fatal(err)
		}
		return amp.Draft{Type: amp.TypeCapResult, Body: body}
	})
	k := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{8}, 32))
	send, err := amp.NewSender(amp.SenderConfig{Identity: amp.Identity{DID: amp.DIDKey(k.Public().(ed25519.PublicKey)), SigningKey: k},
		Rand: rand.Reader, Now: testNow})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range termtest.Payloads {
		if p.Name == "very long text" || !utf8.ValidString(p.Text) {
			continue // a result is shown whole; CBOR text is UTF-8
		}
		payload = p.Text
		r := runCLI(t, "", "invoke", url, "--key", key, "--to", did, "--id", "org.example.x:1.0.0", "--params", "{}")
		if r.code != 0 {
			t.Fatalf("%s: invoke: exit %d %s", p.Name, r.code, r.stderr)
		}
		termtest.Check(t, p.Name+", invoke", r.stdout+r.stderr, 1<<20)

		body, err := amp.Marshal(map[string]any{"text": p.Text})
		if err != nil {
			t.Fatal(err)
		}
		_, msg, err := send.Seal(context.Background(), amp.Draft{Type: amp.TypeCapResult, To: amp.To(did), Body: body})
		if err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(dir, "m.bin")
		if err := os.WriteFile(file, msg, 0o600); err != nil {
			t.Fatal(err)
		}
		for _, sub := range []string{"verify", "inspect"} {
			r = runCLI(t, "", "msg", sub, file)
			if r.code != 0 {
				t.Fatalf("%s: msg %s: exit %d %s", p.Name, sub, r.code, r.stderr)
			}
			termtest.Check(t, p.Name+", msg "+sub, r.stdout+r.stderr, 1<<20)
		}
	}
}

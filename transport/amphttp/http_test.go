package amphttp

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
)

func TestHTTPTransportErrors(t *testing.T) {
	if _, err := NewTransport("ftp://x", 0); err == nil {
		t.Fatal("ftp url accepted")
	}
	tr, _ := NewTransport("http://127.0.0.1:1", 1)
	_, err := tr.RoundTrip(context.Background(), []byte{0xf6})
	if !errors.Is(err, amp.CodeEndpointUnreachable) {
		t.Fatalf("closed port: %v", err)
	}
}

// unverified is what a runtime returns for bytes that did not verify.
type unverified struct{ err *amp.Error }

func (u unverified) Error() string    { return u.err.Error() }
func (u unverified) Unwrap() error    { return u.err }
func (u unverified) Unverified() bool { return true }

// handlerFunc is a Handler with a fixed DID.
type handlerFunc func(ctx context.Context, msg []byte) ([]byte, error)

func (f handlerFunc) Handle(ctx context.Context, msg []byte) ([]byte, error) { return f(ctx, msg) }
func (f handlerFunc) DID() string                                            { return "did:example:agent" }

// TestHandlerNeverSignsForWhatDidNotVerify: the status of a refusal
// follows what the handler says of the bytes: unverified is 400 whatever
// its code (even a retryable one: nothing about it can be trusted), a
// transient failure of a verified message is 503 with Retry-After, any
// other failure 500, a report 202 without a body; and a refusal never
// carries a reply body.
func TestHandlerNeverSignsForWhatDidNotVerify(t *testing.T) {
	for _, c := range []struct {
		name       string
		reply      []byte
		err        error
		status     int
		retryAfter bool
	}{
		{"unverified", nil, unverified{amp.NewError(amp.CodeInvalidSignature, "bad signature")}, 400, false},
		{"unverified with a retryable code", nil, unverified{amp.NewError(amp.CodeUnavailable, "no key")}, 400, false},
		{"verified but overloaded", nil, amp.NewError(amp.CodeOverloaded, "busy"), 503, true},
		{"verified but timed out", nil, amp.NewError(amp.CodeTimeout, "late"), 503, true},
		{"internal failure", nil, errors.New("disk on fire"), 500, false},
		{"a report", nil, nil, 202, false},
		{"a reply", []byte{0xa0}, nil, 200, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(NewHandler(handlerFunc(func(context.Context, []byte) ([]byte, error) { return c.reply, c.err }), Options{}))
			defer srv.Close()
			req, _ := http.NewRequest(http.MethodPost, srv.URL+MessagesPath, bytes.NewReader([]byte{0xa0}))
			req.Header.Set("Content-Type", ContentType)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var body bytes.Buffer
			body.ReadFrom(resp.Body)
			if resp.StatusCode != c.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, c.status)
			}
			if got := resp.Header.Get("Retry-After") != ""; got != c.retryAfter {
				t.Fatalf("Retry-After present = %v", got)
			}
			switch {
			case c.status == 200 && !bytes.Equal(body.Bytes(), c.reply):
				t.Fatalf("reply %x", body.Bytes())
			case c.status == 202 && body.Len() != 0:
				t.Fatalf("a report was answered with %d bytes", body.Len())
			case c.status >= 400:
				if _, err := amp.DecodeError(body.Bytes()); err != nil {
					t.Fatalf("refusal without a CBOR error body: %v", err)
				}
			}
		})
	}
}

package main

import (
	"bufio"
	"encoding/hex"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/transport/amphttp"
	"github.com/ampbundle/ampbundle/transport/ampstcp"
)

// TestUnsignedRefusalIsNotShownAsTheProvidersWord: whoever answers the
// URL (the agent, or anyone on the path of http://) refuses the request
// without a signed message: HTTP 400 with an unsigned CBOR error body, or
// over amp:// an ERROR frame naming the message, with code 4004, a message
// and details of its choosing. docs/FORMAT.md ("Transport error body") says
// a client must treat it as unauthenticated: it says why the transport
// refused, never what a peer decided. Shown as the refusal's code with
// "details from the provider: ...", exactly as a signed ERROR of --to, it
// would let anyone on the path speak for the provider. The output says
// that the refusal is unsigned and never attributes its text to the
// provider (unsigned_refusal, TRANSPORT-8).
func TestUnsignedRefusalIsNotShownAsTheProvidersWord(t *testing.T) {
	const msg = "the provider refused your params"
	why := map[string]any{"why": "your key was revoked: enrol again at https://evil.example/"}
	details, err := amp.Marshal(why)
	if err != nil {
		t.Fatal(err)
	}
	body, err := amp.Marshal(amp.ErrorBody{Code: amp.CodeSchemaViolation, Category: amp.CodeSchemaViolation.Category(),
		Message: msg, Details: details})
	if err != nil {
		t.Fatal(err)
	}
	unsigned := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", amphttp.ContentType)
		w.WriteHeader(http.StatusBadRequest)
		w.Write(body)
	}))
	defer unsigned.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				if _, err := ampstcp.ReadFrame(br, ampstcp.MaxControlPayload+1); err != nil {
					return
				}
				c.Write(ampstcp.AppendFrame(nil, ampstcp.FrameHandshake, ampstcp.EncodeHandshakeResponse(
					ampstcp.HandshakeResponse{Version: ampstcp.Version, Accepted: true, MaxMsgSize: 16 << 20})))
				for {
					f, err := ampstcp.ReadFrame(br, 16<<20)
					if err != nil {
						return
					}
					in, err := amp.Limits{}.Inspect(f.Payload)
					if err != nil {
						return
					}
					id, _ := hex.DecodeString(in.ID)
					c.Write(ampstcp.AppendFrame(nil, ampstcp.FrameError, ampstcp.EncodeErrorFrame(
						amp.NewError(amp.CodeSchemaViolation, msg).WithDetails(why), id)))
				}
			}()
		}
	}()
	key, _ := keygen(t, t.TempDir(), "caller.pem")
	_, did := keygen(t, t.TempDir(), "provider.pem")
	for _, url := range []string{unsigned.URL, "amp://" + ln.Addr().String()} {
		r := runCLI(t, "", "invoke", url, "--key", key, "--to", did, "--id", "org.example.x:1.0.0", "--params", "{}")
		if r.code == 0 || !strings.Contains(r.stderr, msg) {
			t.Fatalf("%s: exit %d, not the refusal: %+v", url, r.code, r)
		}
		low := strings.ToLower(r.stderr)
		if strings.Contains(low, "from the provider") || strings.Contains(low, "provider reports") {
			t.Errorf("%s: an unsigned refusal is attributed to the provider:\n%s", url[:4], r.stderr)
		}
		if !strings.Contains(low, "unsigned") && !strings.Contains(low, "not verified") && !strings.Contains(low, "unverified") {
			t.Errorf("%s: nothing says the refusal is unsigned:\n%s", url[:4], r.stderr)
		}
	}
}

package main

import (
	"bufio"
	"net"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/transport/ampstcp"
)

// unsignedHandshakeAgent serves amp:// on loopback, answering every handshake
// with answer (the frame written after the client's handshake), unsigned.
func unsignedHandshakeAgent(t *testing.T, answer []byte) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				if _, err := ampstcp.ReadFrame(bufio.NewReader(c), ampstcp.MaxControlPayload+1); err != nil {
					return
				}
				c.Write(answer)
			}()
		}
	}()
	return "amp://" + ln.Addr().String()
}

// TestUnsignedHandshakeRefusalCannotSteerTheCode: whoever answers amp://
// (the agent, or anyone on the path of plain TCP) refuses the handshake,
// unsigned, either with a handshake response {accepted: false, error:
// {code: 3001, "your key was revoked: enrol again at
// https://evil.example/"}} or with a handshake ERROR frame claiming 5004.
// Taken as the agent's word, the claim would decide the exit and --json
// amp_code (the caller unauthorized) and whether client.Send retries, and
// the peer's text would read as the agent's. As every other unsigned
// refusal (TRANSPORT-8) it is unsigned_refusal under the binding's own
// code, the claimed code and message in the details only.
func TestUnsignedHandshakeRefusalCannotSteerTheCode(t *testing.T) {
	const lure = "your key was revoked: enrol again at https://evil.example/"
	refused := ampstcp.AppendFrame(nil, ampstcp.FrameHandshake, ampstcp.EncodeHandshakeResponse(ampstcp.HandshakeResponse{
		Version: ampstcp.Version, Accepted: false,
		Error: &amp.ErrorBody{Code: amp.CodeUnauthorized, Category: amp.CodeUnauthorized.Category(), Message: lure}}))
	busy := ampstcp.AppendFrame(nil, ampstcp.FrameError, ampstcp.EncodeErrorFrame(amp.NewError(amp.CodeOverloaded, lure), nil))
	key, _ := keygen(t, t.TempDir(), "caller.pem")
	_, did := keygen(t, t.TempDir(), "provider.pem")
	for name, answer := range map[string][]byte{"handshake response": refused, "handshake ERROR frame": busy} {
		url := unsignedHandshakeAgent(t, answer)
		r := runCLI(t, "", "invoke", url, "--key", key, "--to", did, "--id", "org.example.x:1.0.0", "--params", "{}", "--json", "--wait", "3s")
		code, ampCode := errorDoc(t, r)
		if code != "unsigned_refusal" {
			t.Errorf("%s: --json code %q (amp_code %d): an unsigned handshake refusal is not named unsigned_refusal", name, code, ampCode)
		}
		if amp.Code(ampCode) == amp.CodeUnauthorized {
			t.Errorf("%s: the unsigned claim 3001 became the CLI's amp_code", name)
		}
		h := runCLI(t, "", "invoke", url, "--key", key, "--to", did, "--id", "org.example.x:1.0.0", "--params", "{}", "--wait", "3s")
		low := strings.ToLower(h.stderr)
		if strings.Contains(h.stderr, lure) && !strings.Contains(low, "unsigned") && !strings.Contains(low, "not verified") {
			t.Errorf("%s: the peer's unsigned text is shown as the agent's word:\n%s", name, h.stderr)
		}
	}
}

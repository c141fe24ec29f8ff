package ampstcp

import (
	"bytes"
	"encoding/hex"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
)

// docExample returns the bytes of the annotated example after marker in
// docs/TRANSPORT.md: on each line, the hex groups before the comment.
func docExample(t *testing.T, marker string) []byte {
	t.Helper()
	doc, err := os.ReadFile("../../docs/TRANSPORT.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(doc)
	i := strings.Index(s, "<!-- "+marker+" -->")
	if i < 0 {
		t.Fatalf("docs/TRANSPORT.md has no %s example", marker)
	}
	block := s[i:]
	block = block[strings.Index(block, "```")+3:]
	block = block[:strings.Index(block, "```")]
	hexGroup := regexp.MustCompile(`^[0-9a-f]+$`)
	var out []byte
	for _, line := range strings.Split(block, "\n") {
		if k := strings.Index(line, "#"); k >= 0 {
			line = line[:k] // the annotation
		}
		for _, f := range strings.Fields(line) {
			if !hexGroup.MatchString(f) || len(f)%2 != 0 {
				t.Fatalf("the %s example has %q where hex belongs", marker, f)
			}
			b, _ := hex.DecodeString(f)
			out = append(out, b...)
		}
	}
	if len(out) == 0 {
		t.Fatalf("the %s example is empty", marker)
	}
	return out
}

func TestTransportDocExamplesAreWhatTheCodeReadsAndWrites(t *testing.T) {
	req := docExample(t, "handshake-request")
	if want := AppendFrame(nil, FrameHandshake, EncodeHandshakeRequest(HandshakeRequest{Version: 1, MaxMsgSize: 16 << 20})); !bytes.Equal(req, want) {
		t.Fatalf("handshake request example:\n doc  %x\n code %x", req, want)
	}
	f, err := readOne(req, 1<<20)
	if err != nil || f.Type != FrameHandshake {
		t.Fatal(err)
	}
	if q, err := DecodeHandshakeRequest(f.Payload); err != nil || q.Version != 1 || q.MaxMsgSize != 16<<20 {
		t.Fatalf("%+v %v", q, err)
	}
	resp := docExample(t, "handshake-response")
	if want := AppendFrame(nil, FrameHandshake, EncodeHandshakeResponse(HandshakeResponse{Version: 1, Accepted: true, MaxMsgSize: 16 << 20})); !bytes.Equal(resp, want) {
		t.Fatalf("handshake response example:\n doc  %x\n code %x", resp, want)
	}
	ef := docExample(t, "error-frame")
	f, err = readOne(ef, 1<<20)
	if err != nil || f.Type != FrameError {
		t.Fatal(err)
	}
	e, err := DecodeErrorFrame(f.Payload)
	if err != nil || e.Error.Code != amp.CodeInvalidSignature || hex.EncodeToString(e.MessageID) != "018d746b370000000000000000000001" {
		t.Fatalf("%+v %v", e, err)
	}
	if want := AppendFrame(nil, FrameError, EncodeErrorFrame(amp.NewError(amp.CodeInvalidSignature, "signature does not verify"), e.MessageID)); !bytes.Equal(ef, want) {
		t.Fatalf("error frame example:\n doc  %x\n code %x", ef, want)
	}
}

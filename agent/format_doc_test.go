package agent

import (
	"bytes"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/transport/amphttp"
)

// TestFormatDocTransportErrorBody: the transport error body of
// docs/FORMAT.md is byte for byte what the agent answers, unsigned, to a
// message whose signature does not verify (threat: a client built from the
// doc misreading the agent's refusals, or the agent signing them).
func TestFormatDocTransportErrorBody(t *testing.T) {
	doc, err := os.ReadFile("../docs/FORMAT.md")
	if err != nil {
		t.Fatal(err)
	}
	const begin, end = "<!-- transport-error-hex:begin -->", "<!-- transport-error-hex:end -->"
	a, b := bytes.Index(doc, []byte(begin)), bytes.Index(doc, []byte(end))
	if a < 0 || b < a {
		t.Fatal("docs/FORMAT.md has no transport error example")
	}
	var want []byte
	for _, line := range strings.Split(string(doc[a+len(begin):b]), "\n") {
		for _, w := range strings.Fields(line) {
			x, err := hex.DecodeString(w)
			if err != nil {
				break // the annotation starts
			}
			want = append(want, x...)
		}
	}
	if len(want) != 73 || !bytes.Contains(doc, []byte("73 bytes")) {
		t.Fatalf("the example has %d bytes, the doc says 73", len(want))
	}
	e := newEnv(t)
	req, msg := e.seal(e.caller, amp.TypePing, nil)
	forged := bytes.Replace(msg, req.Sig, make([]byte, 64), 1)
	srv := httptest.NewServer(amphttp.NewHandler(e.agent, amphttp.Options{}))
	defer srv.Close()
	resp, err := http.Post(srv.URL+amphttp.MessagesPath, amphttp.ContentType, bytes.NewReader(forged))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Content-Type") != amphttp.ContentType || !bytes.Equal(got, want) {
		t.Fatalf("status %d, body %x; the doc says 400 with %x", resp.StatusCode, got, want)
	}
	if eb, err := amp.DecodeError(got); err != nil || eb.Code != amp.CodeInvalidSignature {
		t.Fatalf("the body does not decode as an error body: %v", err)
	}
}

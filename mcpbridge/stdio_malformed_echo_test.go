package mcpbridge

import (
	"io"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
)

// TestStdioMalformedMessageEchoesNoInput (threat: a stdio peer's malformed
// message ends the session with an error whose text quotes the peer's
// bytes, as encoding/json's syntax errors do): the reader ends with the
// error's name, malformed_json, and no byte of what was sent; a value cut
// off at the end of input is malformed too, and a clean end is io.EOF.
func TestStdioMalformedMessageEchoesNoInput(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     string // error name; "" for io.EOF
	}{
		{"syntax", "{\"jsonrpc\":\"2.0\",\x1b[31mEVIL}\n", ErrMalformedBody},
		{"cut at the end", "{\"jsonrpc\":\"2.0\",\"id\":1", ErrMalformedBody},
		{"clean end", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &checkedReader{src: io.NopCloser(strings.NewReader(tc.in)), maxArgs: 1 << 20}
			_, err := io.ReadAll(r)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("clean end: %v, want io.EOF (nil from ReadAll)", err)
				}
				return
			}
			if got := string(amp.NameOf(err)); got != tc.want {
				t.Fatalf("error %v named %q, want %q", err, got, tc.want)
			}
			if msg := err.Error(); strings.Contains(msg, "EVIL") || strings.Contains(msg, "\x1b") || strings.Contains(msg, "jsonrpc") {
				t.Fatalf("error text echoes the input: %q", msg)
			}
		})
	}
}

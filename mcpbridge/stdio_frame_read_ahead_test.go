package mcpbridge

import (
	"context"
	"io"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ampbundle/ampbundle/agent"
	"github.com/ampbundle/ampbundle/amp"
)

// countingReader counts the bytes read from r.
type countingReader struct {
	io.ReadCloser
	n atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// stdioPing is a ping with id and a _meta string of pad bytes: a message
// of about pad bytes that the body check admits.
func stdioPing(id, pad int) string {
	return `{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"method":"ping","params":{"_meta":{"x":"` + strings.Repeat("a", pad) + `"}}}`
}

// TestStdioMessageReadAheadPastItsFrameIsRefused: the stdio check reads
// the stream through a json.Decoder that reads ahead, and its frame count
// was reset to 0 after each message, so the bytes of the next message the
// decoder had already buffered were counted for nobody. A host that sent
// one message near the line length (the decoder's buffer grows to it),
// then a small one and a large one in one write, had the large one
// buffered, checked and handed on at about twice MaxLineLength
// (threat: the bound of what the agent holds for one stdio message,
// 16 MiB by default, doubled; the check, the decoder and the copy
// handed to the SDK each held it).
//
// Should: the bytes already buffered past a message count for the next
// one; no message is read past MaxLineLength, and the session ends with
// body_too_large; a message within it after the same read-ahead is
// answered.
func TestStdioMessageReadAheadPastItsFrameIsRefused(t *testing.T) {
	const maxLine = 4096
	for _, tc := range []struct {
		name     string
		pad      int // of the third message
		answered bool
	}{
		{"within the line length", maxLine - 200, true},
		{"past the line length once read ahead", 2*maxLine - 400, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, newStoreFile(t), agent.Rules{{Caller: "*", Prefix: "*"}})
			inR, inW := io.Pipe()
			outR, outW := io.Pipe()
			src := &countingReader{ReadCloser: inR}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			t.Cleanup(func() { cancel(); inW.Close(); outR.Close() })
			go func() {
				done <- e.bridge.ServeStdio(ctx, testPrincipal, &mcp.IOTransport{Reader: src, Writer: outW, MaxLineLength: maxLine})
			}()
			answers := make(chan string, 4)
			go func() {
				buf := make([]byte, 64<<10)
				for {
					n, err := outR.Read(buf)
					if n > 0 {
						answers <- string(buf[:n])
					}
					if err != nil {
						close(answers)
						return
					}
				}
			}()
			// The first message grows the decoder's buffer to about the
			// line length; the next two come in one write, so that the
			// decoder reads the third's first bytes with the second.
			first := stdioPing(1, maxLine-200) + "\n"
			go inW.Write([]byte(first))
			if a := <-answers; !strings.Contains(a, `"id":1`) {
				t.Fatalf("the first message was not answered: %.100q", a)
			}
			second := stdioPing(2, 0) + "\n"
			third := stdioPing(3, tc.pad) + "\n"
			go inW.Write([]byte(second + third))
			got := readAnswers(t, answers, done, `"id":3`)
			if answered := strings.Contains(got, `"id":3`); answered != tc.answered {
				t.Fatalf("the third message (%d bytes) answered: %v, want %v", len(third)-1, answered, tc.answered)
			}
			if tc.answered {
				return
			}
			var err error
			select {
			case err = <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("the session did not end")
			}
			if amp.NameOf(err) != ErrBodyTooLarge {
				t.Errorf("the session ended with %v, want body_too_large", err)
			}
			// What was read of the third message: at most the line length.
			if read := src.n.Load() - int64(len(first)+len(second)); read > maxLine {
				t.Errorf("%d bytes of the third message were read, want at most the line length %d", read, maxLine)
			}
		})
	}
}

// readAnswers gathers what the agent writes until it holds want, the
// agent stops writing, or the session ends.
func readAnswers(t *testing.T, answers <-chan string, done chan error, want string) string {
	t.Helper()
	got := ""
	timeout := time.After(10 * time.Second)
	for !strings.Contains(got, want) {
		select {
		case a, ok := <-answers:
			if !ok {
				return got
			}
			got += a
		case err := <-done:
			done <- err
			return got
		case <-timeout:
			t.Fatal("no answer and no end of the session")
		}
	}
	return got
}

package mcpbridge

import (
	"encoding/json"
	"errors"
	"io"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ampbundle/ampbundle/amp"
)

// checkedStdio returns t with each message it reads checked by checkBody,
// as the HTTP endpoint checks a POST body (MCP-20, MCP-35), for the
// transports whose bytes the bridge can reach: an *mcp.IOTransport and an
// *mcp.StdioTransport. Any other transport (the SDK's in-memory pipes of
// tests, a caller's own) is returned as it is.
func checkedStdio(t mcp.Transport, maxArgs int) mcp.Transport {
	switch x := t.(type) {
	case *mcp.IOTransport:
		return &mcp.IOTransport{Reader: &checkedReader{src: x.Reader, maxLine: x.MaxLineLength, maxArgs: maxArgs},
			Writer: x.Writer, MaxLineLength: x.MaxLineLength}
	case *mcp.StdioTransport:
		return &mcp.IOTransport{Reader: &checkedReader{src: os.Stdin, maxLine: x.MaxLineLength, maxArgs: maxArgs},
			Writer: stdoutCloser{}, MaxLineLength: x.MaxLineLength}
	}
	return t
}

// stdoutCloser is the process's stdout, never closed (as the SDK's
// StdioTransport leaves it).
type stdoutCloser struct{}

// Write implements io.Writer: it writes to os.Stdout.
func (stdoutCloser) Write(p []byte) (int, error) { return os.Stdout.Write(p) }

// Close implements io.Closer: it leaves os.Stdout open.
func (stdoutCloser) Close() error { return nil }

// checkedReader frames src as the SDK's stdio connection does (one JSON
// value after another, each followed by a newline, a frame of at most
// maxLine bytes as the SDK reads it) and hands the SDK each value only
// once checkBody accepted it; the first value refused ends the stream
// with checkBody's named error, which ends the session (the SDK ends a
// stdio session on a line it cannot read). The SDK sees the accepted
// values as written, each followed by the byte that followed it (a
// newline for its check), so its own framing rules hold unchanged.
type checkedReader struct {
	src     io.ReadCloser
	maxLine int
	maxArgs int
	dec     *json.Decoder
	limit   *frameLimit
	pending []byte // checked bytes not yet handed on
	err     error  // the error after pending
}

// frameLimit bounds the bytes the decoder buffers for one value, as the
// SDK's frame limit does (mcp.IOTransport.MaxLineLength: 0 its default,
// below 0 none). count is the bytes read for the value being decoded:
// those read since the end of the one before, the ones the decoder had
// already read ahead with it included (docs/SPEC-DECISIONS.md MCP-44).
type frameLimit struct {
	r     io.Reader
	limit int
	count int
	total int64 // bytes read from r
}

// errStdioFrameTooLarge ends a stdio session whose message is longer
// than the transport's MaxLineLength: ErrBodyTooLarge, the HTTP
// endpoint's name for a body over its bound (a new error each time: an
// amp.Error is not shared).
func errStdioFrameTooLarge() error {
	return amp.Named(amp.CodeInvalidMessage, ErrBodyTooLarge, "a stdio message is longer than the transport's maximum line length")
}

// Read implements io.Reader: it reads f.r, and fails with
// errStdioFrameTooLarge once count reached limit.
func (f *frameLimit) Read(p []byte) (int, error) {
	if f.limit > 0 {
		if f.count >= f.limit {
			return 0, errStdioFrameTooLarge()
		}
		p = p[:min(len(p), f.limit-f.count)]
	}
	n, err := f.r.Read(p)
	f.count += n
	f.total += int64(n)
	return n, err
}

// next starts the count of the next value at the bytes read past the
// end of the last, at offset end of the stream (the decoder's
// InputOffset): the decoder reads ahead, and bytes it read with one value
// are the next one's. Reset to 0, a value read ahead with a value near
// the limit could reach twice the limit before it was refused.
func (f *frameLimit) next(end int64) { f.count = int(f.total - end) }

// Read implements io.Reader.
func (r *checkedReader) Read(p []byte) (int, error) {
	for len(r.pending) == 0 {
		if r.err != nil {
			return 0, r.err
		}
		r.next()
	}
	n := copy(p, r.pending)
	r.pending = r.pending[n:]
	return n, nil
}

// next reads and checks one value into pending, or sets err.
func (r *checkedReader) next() {
	if r.dec == nil {
		limit := r.maxLine
		if limit == 0 {
			limit = mcp.DefaultMaxLineLength
		}
		r.limit = &frameLimit{r: r.src, limit: limit}
		r.dec = json.NewDecoder(r.limit)
	}
	var raw json.RawMessage
	if err := r.dec.Decode(&raw); err != nil {
		// A syntax error's text quotes the input: the session ends
		// with the error's name instead (no raw byte echoed).
		var se *json.SyntaxError
		if errors.As(err, &se) || errors.Is(err, io.ErrUnexpectedEOF) {
			err = errBody(ErrMalformedBody)
		}
		r.err = err
		return
	}
	if err := checkBody(raw, r.maxArgs); err != nil {
		r.err = err
		return
	}
	// The byte after the value, for the SDK's trailing-data check: a
	// newline when none is buffered yet (the SDK accepts that too).
	after := byte('\n')
	var b [1]byte
	if n, _ := r.dec.Buffered().Read(b[:]); n == 1 && b[0] != '\r' {
		after = b[0]
	}
	r.pending = append(raw, after) // raw is the decoder's fresh copy
	r.limit.next(r.dec.InputOffset())
}

// Close implements io.Closer: it closes src.
func (r *checkedReader) Close() error { return r.src.Close() }

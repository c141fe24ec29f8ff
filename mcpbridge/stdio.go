package mcpbridge

import (
	"encoding/json"
	"errors"
	"io"
	"os"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ampbundle/ampbundle/amp"
)

// checkedStdio returns t with each message it reads checked by messageCounter,
// as the HTTP endpoint checks a POST body (MCP-20, MCP-35), for the
// transports whose bytes the bridge can reach: an *mcp.IOTransport and an
// *mcp.StdioTransport. Any other transport (the SDK's in-memory pipes of
// tests, a caller's own) is returned as it is.
func checkedStdio(t mcp.Transport, maxArgs int) mcp.Transport {
	switch x := t.(type) {
	case *mcp.IOTransport:
		out := &lockedWriter{w: x.Writer}
		return &mcp.IOTransport{Reader: &checkedReader{src: x.Reader, out: out, maxLine: x.MaxLineLength, maxArgs: maxArgs},
			Writer: out, MaxLineLength: x.MaxLineLength}
	case *mcp.StdioTransport:
		out := &lockedWriter{w: stdoutCloser{}}
		return &mcp.IOTransport{Reader: &checkedReader{src: os.Stdin, out: out, maxLine: x.MaxLineLength, maxArgs: maxArgs},
			Writer: out, MaxLineLength: x.MaxLineLength}
	}
	return t
}

// lockedWriter is a stdio transport's writer shared by the SDK (one Write
// per message, mcp/transport.go ioConn.Write) and the checkedReader's
// refusals (ErrNotificationBatched): a lock keeps each Write whole.
type lockedWriter struct {
	mu sync.Mutex
	w  io.WriteCloser
}

// Write implements io.Writer: p is written whole before any other Write.
func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// Close implements io.Closer: it closes the writer.
func (l *lockedWriter) Close() error { return l.w.Close() }

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
// once messageCounter accepted it; the first value refused ends the stream
// with messageCounter's named error, which ends the session (the SDK ends a
// stdio session on a line it cannot read). The SDK sees the accepted
// values as written, each followed by the byte that followed it (a
// newline for its check), so its own framing rules hold unchanged. A
// batch holding a notification is not handed on: out answers it
// (batchRefusal, ErrNotificationBatched) and the next value is read.
type checkedReader struct {
	src     io.ReadCloser
	out     *lockedWriter // where a refused batch is answered
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
	c := messageCounter(raw, r.maxArgs, false)
	if err := c.text(roleRoot); err != nil {
		r.err = err
		return
	}
	if c.notes > 0 && raw[0] == '[' {
		r.limit.next(r.dec.InputOffset())
		if len(c.reqIDs) == 0 {
			// Nothing in it is owed an answer: the SDK is handed its
			// messages one by one, in order, and nothing is written
			// (a host's [notifications/initialized] still initializes).
			r.pending, r.err = unbatched(raw)
			return
		}
		// go-sdk v1.8.0 would never answer it (MCP-53): its requests
		// are answered here, the SDK sees none of it.
		if _, err := r.out.Write(batchRefusal(c.reqIDs)); err != nil {
			r.err = err
		}
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

// unbatched returns the messages of batch, which messageCounter checked,
// each as written and followed by a newline, for the SDK to read one
// after another.
func unbatched(batch []byte) ([]byte, error) {
	var msgs []json.RawMessage
	if err := json.Unmarshal(batch, &msgs); err != nil {
		return nil, errBody(ErrMalformedBody) // not reached: checked
	}
	out := make([]byte, 0, len(batch)+len(msgs))
	for _, m := range msgs {
		out = append(append(out, m...), '\n')
	}
	return out, nil
}

// batchRefusal is the answer to a stdio batch refused with
// ErrNotificationBatched: a JSON-RPC batch answer holding one error per
// request, under its id (ids, as written and checked by validRequestID:
// a string is written again from its decoded value, an integer as it
// is), then a newline. ids is never empty: a batch of notifications
// alone is not refused (next hands it to the SDK unbatched), so the
// answer is never an empty array.
func batchRefusal(ids [][]byte) []byte {
	type rpcError struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	}
	type answer struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   rpcError        `json:"error"`
	}
	out := make([]answer, 0, len(ids))
	for _, id := range ids {
		if id[0] == '"' {
			var s string
			if json.Unmarshal(id, &s) != nil {
				id = []byte("null") // not reached: validRequestID read it
			} else {
				id = mustJSON(s)
			}
		}
		out = append(out, answer{JSONRPC: "2.0", ID: id, Error: rpcError{Code: jsonrpc.CodeInvalidRequest,
			Message: notificationBatchedText, Data: notificationBatchedData}})
	}
	return append(mustJSON(out), '\n')
}

// notificationBatchedText is the message of ErrNotificationBatched.
const notificationBatchedText = "a batch holding a notification is not served: send its messages one by one"

// notificationBatchedData is the data of ErrNotificationBatched.
var notificationBatchedData = mustJSON(map[string]any{"code": uint16(amp.CodeBadRequest), "name": ErrNotificationBatched})

package client

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"time"

	"github.com/fxamacker/cbor/v2"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/capability"
)

// OneWay is a Transport that can also send a message without waiting for
// a reply: for messages that get none when all is well (STREAM_START,
// STREAM_DATA, reports). ampstcp.Transport is one; over a transport that
// is not, Post uses RoundTrip, and a message taken without a reply comes
// back as a nil reply (HTTP 202).
type OneWay interface {
	Send(ctx context.Context, msg []byte) error
}

// Post sends one message of type typ that may get no reply. Over a OneWay
// transport it does not wait for one (a refusal the peer sends anyway is
// not seen: the STREAM_END's answer tells the outcome of a stream). Over
// any other transport a signed ERROR reply is returned as its error. A
// failure is retried with the same message as for Send: the same rule
// decides whether a retry may change it, and the same wait comes before
// it (resend; docs/SPEC-DECISIONS.md TRANSPORT-8).
func (c *Client) Post(ctx context.Context, typ amp.Type, body []byte) (*amp.Message, error) {
	req, msg, err := c.send.Seal(ctx, amp.Draft{Type: typ, To: amp.To(c.cfg.Peer), TTL: c.cfg.TTL, Body: body, Encrypt: c.cfg.Encrypt})
	if err != nil {
		return nil, err
	}
	ow, oneWay := c.cfg.Transport.(OneWay)
	err = c.resend(ctx, req, func() (bool, bool, error) {
		var raw []byte
		var err error
		if oneWay {
			err = ow.Send(ctx, msg)
		} else {
			raw, err = c.cfg.Transport.RoundTrip(ctx, msg)
		}
		if err != nil {
			return redeliverable(err), false, err
		}
		if raw == nil {
			return false, false, nil
		}
		reply, err := c.verify(ctx, raw, req)
		if err != nil {
			return false, false, err
		}
		if reply.Type != amp.TypeError {
			return false, false, amp.Named(amp.CodeBadRequest, "unexpected_reply", "expected no reply to %s, got %s", typ.Name(), reply.Type.Name())
		}
		again, err := replyError(reply)
		return again, true, err
	})
	return req, err
}

// Stream describes content to send as a stream (RFC 001 §6.2).
type Stream struct {
	// ID is the stream_id; empty: 32 random hex digits.
	ID string
	// ContentType and Filename go into STREAM_START (Filename defaults to
	// "content").
	ContentType, Filename string
	// Size is the content's length in bytes.
	Size uint64
	// ChunkSize is the size of every chunk but the last (default 256 KiB).
	ChunkSize uint64
}

// DefaultChunkSize is the chunk size of SendStream when none is given.
const DefaultChunkSize = 256 << 10

// maxChunkBuffer bounds the chunk a client sends (1 GiB: far above what
// any agent's message size takes, amp.DefaultMaxMessageSize being 16 MiB),
// so that a chunk size no memory holds is refused, chunk_size_too_large,
// before anything is sent.
const maxChunkBuffer = 1 << 30

// SendStream sends content (s.Size bytes, never held whole) as
// STREAM_START, STREAM_DATA in order and STREAM_END with its SHA-256, and
// returns the stream_id used and the provider's ACK once it says
// verified: true. Any other answer is an error: the provider's ERROR
// (stream_id in its details), or unexpected_reply. Content is read once;
// over a OneWay transport, when chunks were lost and content is an
// io.Seeker, it is read and sent once more (docs/TRANSPORT.md §4).
func (c *Client) SendStream(ctx context.Context, s Stream, content io.Reader) (string, *amp.AckBody, error) {
	if s.ID == "" {
		var b [16]byte
		if _, err := io.ReadFull(c.cfg.Rand, b[:]); err != nil {
			return "", nil, amp.Wrap(amp.CodeInternalError, err, "no randomness for a stream_id")
		}
		s.ID = hex.EncodeToString(b[:])
	}
	if s.ChunkSize == 0 {
		s.ChunkSize = DefaultChunkSize
	}
	if s.Filename == "" {
		s.Filename = "content"
	}
	chunks := uint64(0)
	if s.Size > 0 {
		chunks = (s.Size-1)/s.ChunkSize + 1
	}
	start, err := amp.Marshal(amp.StreamStartBody{StreamID: s.ID, ContentType: s.ContentType, Filename: s.Filename,
		TotalSize: s.Size, TotalChunks: chunks, ChunkSize: s.ChunkSize, HashAlgo: "sha256"})
	if err != nil {
		return s.ID, nil, err
	}
	// No chunk is longer than the content: a chunk size above it (a
	// single chunk) allocates the content's size, not the chunk size; and
	// the buffer is made before the STREAM_START, so that a size no
	// memory holds leaves nothing open at the peer (AMP-22).
	if n := min(s.ChunkSize, s.Size); n > maxChunkBuffer {
		return s.ID, nil, amp.Named(amp.CodeBadRequest, "chunk_size_too_large", "a chunk of %d bytes is more than the %d a client sends", n, uint64(maxChunkBuffer))
	}
	buf := make([]byte, min(s.ChunkSize, s.Size))
	if _, err := c.Post(ctx, amp.TypeStreamStart, start); err != nil {
		return s.ID, nil, err
	}
	_, oneWay := c.cfg.Transport.(OneWay)
	if oneWay && chunks > 0 {
		// A binding that handles messages concurrently (AMPS/TCP) may
		// take a chunk before the STREAM_START: wait until the stream is
		// open. A STREAM_END before any chunk is sent cannot complete it
		// (STREAM-3: it is answered missing_chunks and the stream stays).
		if _, err := c.endStream(ctx, s.ID, make([]byte, sha256.Size), true, "missing_chunks"); err != nil {
			return s.ID, nil, err
		}
	}
	sum, err := c.sendChunks(ctx, s, chunks, content, buf)
	if err != nil {
		return s.ID, nil, err
	}
	ex, err := c.endStream(ctx, s.ID, sum, oneWay, "")
	if rs, ok := content.(io.Seeker); ok && oneWay && amp.NameOf(err) == "stream_incomplete" {
		// A chunk sent without a reply was lost (a connection that ended
		// under it): send them all again, once; the agent ignores the
		// copies of what it has (STREAM-3).
		if _, serr := rs.Seek(0, io.SeekStart); serr == nil {
			again, err2 := c.sendChunks(ctx, s, chunks, content, buf)
			if err2 != nil {
				return s.ID, nil, err2
			}
			if !bytes.Equal(again, sum) {
				return s.ID, nil, amp.Named(amp.CodeInvalidMessage, "content_changed", "the content changed while it was sent again")
			}
			ex, err = c.endStream(ctx, s.ID, sum, oneWay, "")
		}
	}
	if err != nil {
		return s.ID, nil, err
	}
	if err := expect(ex, amp.TypeAck); err != nil {
		return s.ID, nil, err
	}
	ack, err := amp.DecodeAck(ex.Reply.Body)
	if err != nil {
		return s.ID, nil, err
	}
	// An ACK that counts other chunks than were sent says itself that the
	// content did not land whole, whatever its verified flag says.
	if ack.StreamID != s.ID || ack.Verified == nil || !*ack.Verified || (ack.ChunksReceived != nil && *ack.ChunksReceived != chunks) {
		return s.ID, &ack, amp.Named(amp.CodeBadRequest, "stream_not_verified", "the provider did not acknowledge the stream as verified")
	}
	return s.ID, &ack, nil
}

// sendChunks sends the chunks of s read from content, through buf (of
// the largest chunk's size), and returns the SHA-256 of the content.
func (c *Client) sendChunks(ctx context.Context, s Stream, chunks uint64, content io.Reader, buf []byte) ([]byte, error) {
	h := sha256.New()
	for i := uint64(0); i < chunks; i++ {
		n := s.ChunkSize
		if i == chunks-1 {
			n = s.Size - i*s.ChunkSize
		}
		if _, err := io.ReadFull(content, buf[:n]); err != nil {
			return nil, amp.Wrap(amp.CodeInvalidMessage, err, "the content is shorter than its size")
		}
		h.Write(buf[:n])
		data, err := amp.Marshal(amp.StreamDataBody{StreamID: s.ID, Index: i, Data: buf[:n]})
		if err != nil {
			return nil, err
		}
		if _, err := c.Post(ctx, amp.TypeStreamData, data); err != nil {
			return nil, err
		}
	}
	return h.Sum(nil), nil
}

// endProbes bounds the STREAM_ENDs endStream sends for one stream over a
// OneWay transport, retries included.
const endProbes = 30

// endStream sends a STREAM_END with hash and returns the exchange. Over a
// OneWay transport the chunks (or the STREAM_START) may still be in
// flight: while the answer is unknown_stream or missing_chunks it sends a
// new STREAM_END (a new message: STREAM-3 keeps the stream open) after a
// short wait. Every STREAM_END sent counts, the retries Send makes of one
// (Retry) too: at most endProbes in all (docs/SPEC-DECISIONS.md
// STREAM-10). until, when set, is the refusal that ends the wait
// successfully (the probe for an open stream).
func (c *Client) endStream(ctx context.Context, id string, hash []byte, oneWay bool, until string) (*Exchange, error) {
	body, err := amp.Marshal(amp.StreamEndBody{StreamID: id, Hash: hash})
	if err != nil {
		return nil, err
	}
	wait := 5 * time.Millisecond
	for sent := 0; ; {
		probe := c
		if oneWay {
			// A copy whose retries fit in what is left of endProbes.
			capped := *c
			capped.cfg.Retry.MaxAttempts = min(c.cfg.Retry.MaxAttempts, endProbes-sent)
			probe = &capped
		}
		ex, err := probe.Do(ctx, amp.TypeStreamEnd, body)
		n := 1 // every turn counts one at least: the loop ends within endProbes
		if ex != nil {
			n = max(n, ex.Attempts)
		}
		sent += n
		reason := reasonOf(err)
		switch {
		case err == nil || !oneWay:
			return ex, err
		case until != "" && reason == until:
			return ex, nil
		case reason != "unknown_stream" && reason != "missing_chunks":
			return ex, err
		case sent >= endProbes:
			// The last answer is named by its code, error name and reason
			// (one of the two above); its message is the agent's text, any
			// length and any bytes: it stays in the cause, never in this
			// message (docs/SPEC-DECISIONS.md STREAM-9).
			return ex, amp.Named(amp.CodeTimeout, "stream_incomplete", "the agent did not receive the whole stream (its last answer: %d %s, %s)", uint16(amp.CodeOf(err)), amp.NameOf(err), reason).WithCause(err)
		}
		if err := c.cfg.Retry.Sleep(ctx, wait); err != nil {
			return ex, amp.Wrap(amp.CodeTimeout, err, "gave up waiting for the stream")
		}
		if wait *= 2; wait > 500*time.Millisecond {
			wait = 500 * time.Millisecond
		}
	}
}

// reasonOf is details.reason of a peer's ERROR (docs/SPEC-DECISIONS.md
// STREAM-4), or "".
func reasonOf(err error) string {
	e := amp.AsError(err)
	if e == nil {
		return ""
	}
	raw, ok := e.Details.(cbor.RawMessage)
	if !ok {
		return ""
	}
	var d struct {
		Reason string `cbor:"reason"`
	}
	if amp.Unmarshal(raw, &d) != nil {
		return ""
	}
	return d.Reason
}

// InvokeLarge invokes with params too large for one message
// (docs/SPEC-DECISIONS.md STREAM-6): it sends params (one CBOR item, as
// inv.Params would hold) as a stream of capability.ParamsContentType,
// waits for its verified ACK, then sends inv with params null and
// params_stream naming the stream and its SHA-256, and returns the
// CAP_RESULT as Invoke does. The provider validates the streamed params
// like inline ones.
func (c *Client) InvokeLarge(ctx context.Context, inv capability.Invoke, params []byte, chunkSize uint64) (*capability.Result, *Exchange, error) {
	id, _, err := c.SendStream(ctx, Stream{ContentType: capability.ParamsContentType, Filename: "params.cbor",
		Size: uint64(len(params)), ChunkSize: chunkSize}, bytes.NewReader(params))
	if err != nil {
		return nil, nil, err
	}
	if inv, err = inv.WithParamsStream(id, params); err != nil {
		return nil, nil, err
	}
	return c.Invoke(ctx, inv)
}

package client

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"

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
// delivery failure is retried with the same message as Retry says.
func (c *Client) Post(ctx context.Context, typ amp.Type, body []byte) (*amp.Message, error) {
	req, msg, err := c.send.Seal(ctx, amp.Draft{Type: typ, To: amp.To(c.cfg.Peer), TTL: c.cfg.TTL, Body: body, Encrypt: c.cfg.Encrypt})
	if err != nil {
		return nil, err
	}
	ow, oneWay := c.cfg.Transport.(OneWay)
	var lastErr error
	for attempt := 0; attempt < c.cfg.Retry.MaxAttempts; attempt++ {
		if attempt > 0 {
			if err := c.cfg.Retry.Sleep(ctx, c.backoff(attempt-1)); err != nil {
				return req, amp.Wrap(amp.CodeTimeout, err, "gave up retrying")
			}
		}
		var raw []byte
		if oneWay {
			err = ow.Send(ctx, msg)
		} else {
			raw, err = c.cfg.Transport.RoundTrip(ctx, msg)
		}
		if err != nil {
			lastErr = err
			if !amp.AsError(err).Code.Retryable() {
				return req, err
			}
			continue
		}
		if raw == nil {
			return req, nil
		}
		reply, err := c.verify(ctx, raw, req)
		if err != nil {
			return req, err
		}
		if reply.Type != amp.TypeError {
			return req, amp.Named(amp.CodeBadRequest, "unexpected_reply", "expected no reply to %s, got %s", typ.Name(), reply.Type.Name())
		}
		eb, err := amp.DecodeError(reply.Body)
		if err != nil {
			return req, err
		}
		return req, eb.AsError()
	}
	return req, lastErr
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

// SendStream sends content (s.Size bytes, read once, never held whole) as
// STREAM_START, STREAM_DATA in order and STREAM_END with its SHA-256, and
// returns the provider's ACK once it says verified: true. Any other answer
// is an error: the provider's ERROR (stream_id in its details), or
// unexpected_reply. It returns the stream_id used.
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
	if _, err := c.Post(ctx, amp.TypeStreamStart, start); err != nil {
		return s.ID, nil, err
	}
	h := sha256.New()
	buf := make([]byte, s.ChunkSize)
	for i := uint64(0); i < chunks; i++ {
		n := s.ChunkSize
		if i == chunks-1 {
			n = s.Size - i*s.ChunkSize
		}
		if _, err := io.ReadFull(content, buf[:n]); err != nil {
			return s.ID, nil, amp.Wrap(amp.CodeInvalidMessage, err, "the content is shorter than its size")
		}
		h.Write(buf[:n])
		data, err := amp.Marshal(amp.StreamDataBody{StreamID: s.ID, Index: i, Data: buf[:n]})
		if err != nil {
			return s.ID, nil, err
		}
		if _, err := c.Post(ctx, amp.TypeStreamData, data); err != nil {
			return s.ID, nil, err
		}
	}
	end, err := amp.Marshal(amp.StreamEndBody{StreamID: s.ID, Hash: h.Sum(nil)})
	if err != nil {
		return s.ID, nil, err
	}
	ex, err := c.Do(ctx, amp.TypeStreamEnd, end)
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
	if ack.StreamID != s.ID || ack.Verified == nil || !*ack.Verified {
		return s.ID, &ack, amp.Named(amp.CodeBadRequest, "stream_not_verified", "the provider did not acknowledge the stream as verified")
	}
	return s.ID, &ack, nil
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

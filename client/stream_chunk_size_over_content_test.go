package client

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/internal/testalloc"
)

// TestStreamChunkSizeOverTheContentIsNotAllocated: SendStream allocated
// its chunk buffer at Stream.ChunkSize whatever the content's size, after
// the STREAM_START was sent: 100 bytes with a chunk size of 2^62 (one
// chunk, a consistent STREAM_START) panicked (makeslice: len out of
// range), and with 1 GiB allocated 1 GiB for 100 bytes. The buffer is now
// the size of the largest chunk sent, at most the content's size.
func TestStreamChunkSizeOverTheContentIsNotAllocated(t *testing.T) {
	yes := true
	for _, chunk := range []uint64{1 << 30, 1 << 62} {
		t.Run(fmt.Sprint(chunk), func(t *testing.T) {
			p := newParties(t)
			tr := p.scripted(t, func(m *amp.Message, send *amp.Sender) ([]byte, error) {
				if m.Type != amp.TypeStreamEnd {
					return nil, nil // START and DATA get no reply
				}
				e, err := amp.DecodeStreamEnd(m.Body)
				if err != nil {
					return nil, err
				}
				one := uint64(1)
				body, err := amp.Marshal(amp.AckBody{AckSource: amp.AckFromRecipient, ReceivedAt: m.TS, StreamID: e.StreamID,
					ChunksReceived: &one, Verified: &yes})
				if err != nil {
					return nil, err
				}
				_, out, err := send.Seal(context.Background(), amp.Draft{Type: amp.TypeAck, To: amp.To(m.From), ReplyTo: m.ID[:], Body: body})
				return out, err
			})
			c := p.client(t, tr)
			content := bytes.Repeat([]byte("x"), 100)
			got := testalloc.Least(func() { // each a stream of its own
				defer func() {
					if r := recover(); r != nil {
						t.Fatalf("SendStream of 100 bytes in chunks of %d panicked: %v", chunk, r)
					}
				}()
				if _, _, err := c.SendStream(context.Background(), Stream{Size: uint64(len(content)), ChunkSize: chunk}, bytes.NewReader(content)); err != nil {
					t.Fatalf("SendStream: %v", err)
				}
			})
			if got > 16<<20 {
				t.Errorf("SendStream of 100 bytes in chunks of %d allocated %d bytes", chunk, got)
			}
		})
	}
}

// TestStreamChunkNoMemoryHoldsIsRefusedBeforeTheStart: content and chunk
// size both past any memory (2^62) made SendStream post the STREAM_START
// and then panic (makeslice) or run out of memory, the stream left open
// at the peer. The chunk's buffer is judged and made first: refused
// chunk_size_too_large, nothing sent.
func TestStreamChunkNoMemoryHoldsIsRefusedBeforeTheStart(t *testing.T) {
	p := newParties(t)
	var sent int
	tr := p.scripted(t, func(*amp.Message, *amp.Sender) ([]byte, error) {
		sent++
		return nil, nil
	})
	c := p.client(t, tr)
	var err error
	func() {
		defer func() {
			if r := recover(); r != nil {
				t.Fatalf("SendStream of 2^62 bytes in chunks of 2^62 panicked: %v", r)
			}
		}()
		_, _, err = c.SendStream(context.Background(), Stream{Size: 1 << 62, ChunkSize: 1 << 62}, bytes.NewReader(nil))
	}()
	if amp.NameOf(err) != "chunk_size_too_large" {
		t.Fatalf("SendStream of 2^62 bytes in chunks of 2^62: %v (%s), want chunk_size_too_large", err, amp.NameOf(err))
	}
	if sent != 0 {
		t.Fatalf("%d messages sent before the refusal, want none (a STREAM_START left open at the peer)", sent)
	}
}

package client

import (
	"bytes"
	"context"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
)

// TestStreamAckCountingFewerChunksIsNotVerified: a hostile agent answers
// STREAM_END with a signed ACK {stream_id, verified: true,
// chunks_received: N} for a 4-chunk stream, N not 4: content it says
// itself it did not receive whole. A sender that took verified alone
// would believe the transfer landed and drop its copy. SendStream refuses
// an ACK whose chunks_received, when present, is not the number of chunks
// sent (stream_not_verified), as it refuses verified: false (STREAM-8).
func TestStreamAckCountingFewerChunksIsNotVerified(t *testing.T) {
	yes := true
	for _, got := range []uint64{0, 3, 5} {
		p := newParties(t)
		tr := p.scripted(t, func(m *amp.Message, send *amp.Sender) ([]byte, error) {
			if m.Type != amp.TypeStreamEnd {
				return nil, nil // START and DATA get no reply
			}
			e, err := amp.DecodeStreamEnd(m.Body)
			if err != nil {
				return nil, err
			}
			n := got
			body, err := amp.Marshal(amp.AckBody{AckSource: amp.AckFromRecipient, ReceivedAt: m.TS, StreamID: e.StreamID,
				ChunksReceived: &n, Verified: &yes})
			if err != nil {
				return nil, err
			}
			_, out, err := send.Seal(context.Background(), amp.Draft{Type: amp.TypeAck, To: amp.To(m.From), ReplyTo: m.ID[:], Body: body})
			return out, err
		})
		content := bytes.Repeat([]byte("x"), 100) // 4 chunks of at most 32 bytes
		id, ack, err := p.client(t, tr).SendStream(context.Background(), Stream{Size: uint64(len(content)), ChunkSize: 32}, bytes.NewReader(content))
		if err == nil {
			t.Errorf("chunks_received %d of 4: SendStream accepted the ACK for stream %s as verified (%+v)", got, id, ack)
		}
	}
}

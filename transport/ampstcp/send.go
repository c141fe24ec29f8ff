package ampstcp

import (
	"context"

	"github.com/ampbundle/ampbundle/amp"
)

// Send sends msg without waiting for a reply: for the messages that get
// none when all is well (ACK, PROC_OK, PROC_FAIL, ERROR, PROCESSING,
// STREAM_START, STREAM_DATA). It returns once the frame is queued on a
// connection that has not been told to go away; it satisfies
// client.OneWay. Delivery is at most once: a connection that fails before
// the frame is written loses it without a word, and a reply or ERROR
// frame the peer sends anyway (a refusal) matches no request and is
// dropped. Use it only where the protocol tolerates a loss: reports are
// never confirmed, and a lost stream chunk shows in the STREAM_END's
// answer (missing_chunks). A message larger than the peer accepts is
// refused before anything is sent (1001 frame_too_large).
func (t *Transport) Send(ctx context.Context, msg []byte) error {
	if _, _, err := (amp.Limits{MaxMessageSize: len(msg) + 1}).EnvelopeIDs(msg); err != nil {
		return amp.NewError(amp.CodeInvalidMessage, "the message is not an amp message")
	}
	c, err := t.conn(ctx)
	if err != nil {
		return err
	}
	if len(msg) > c.peerMax {
		return amp.Named(amp.CodeInvalidMessage, ErrFrameTooLarge, "the message is larger than the agent accepts (%d bytes)", c.peerMax)
	}
	select {
	case c.out <- outFrame{typ: FrameMessage, payload: msg}:
		return nil
	case <-c.done:
		return c.err
	case <-ctx.Done():
		return amp.Wrap(amp.CodeTimeout, ctx.Err(), "could not send in time")
	}
}

package client

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
)

// dropOneWay is a OneWay transport whose one-way messages are lost (a
// connection that ends under them); its round trips go to rt.
type dropOneWay struct{ rt Transport }

func (d dropOneWay) RoundTrip(ctx context.Context, msg []byte) ([]byte, error) {
	return d.rt.RoundTrip(ctx, msg)
}
func (dropOneWay) Send(context.Context, []byte) error { return nil }

// TestStreamIncompleteQuotesProviderText: the attack: over a
// OneWay transport a hostile provider answers every STREAM_END with a
// signed ERROR whose details.reason is missing_chunks and whose message is
// a terminal escape sequence (set the window title, clear the screen)
// followed by 1 MiB of text. SendStream ended with the client's own 5003
// stream_incomplete whose message, the text amp.SafeMessage hands an
// embedder to show or send on, quoted that message raw and whole ("its
// last answer: ..."). Now the client's own error names the last answer by
// its code, error name and reason only (as the retry loop does,
// TRANSPORT-8) and keeps the provider's ERROR as its cause
// (docs/SPEC-DECISIONS.md STREAM-9).
func TestStreamIncompleteQuotesProviderText(t *testing.T) {
	p := newParties(t)
	hostile := "\x1b]0;pwned\x07\x1b[2J" + strings.Repeat("A", 1<<20)
	tr := p.scripted(t, func(m *amp.Message, send *amp.Sender) ([]byte, error) {
		e, err := amp.DecodeStreamEnd(m.Body)
		if err != nil {
			return nil, err
		}
		details, err := amp.Marshal(map[string]string{"reason": "missing_chunks", "stream_id": e.StreamID})
		if err != nil {
			return nil, err
		}
		no := false
		body, err := amp.Marshal(amp.ErrorBody{Code: amp.CodeInvalidMessage, Category: amp.CodeInvalidMessage.Category(), Message: hostile, Retry: &no, Details: details})
		if err != nil {
			return nil, err
		}
		_, out, err := send.Seal(context.Background(), amp.Draft{Type: amp.TypeError, To: amp.To(m.From), ReplyTo: m.ID[:], Body: body})
		return out, err
	})
	content := bytes.Repeat([]byte("x"), 100)
	_, _, err := p.client(t, dropOneWay{tr}).SendStream(context.Background(), Stream{Size: uint64(len(content)), ChunkSize: 32}, bytes.NewReader(content))
	if amp.NameOf(err) != "stream_incomplete" {
		t.Fatalf("SendStream ended with %v, want stream_incomplete", amp.NameOf(err))
	}
	msg := amp.SafeMessage(err)
	if strings.ContainsAny(msg, "\x1b\x07") || len(msg) > 512 {
		t.Errorf("the client's own stream_incomplete message carries the provider's text raw (%d bytes, starts %q)", len(msg), msg[:min(len(msg), 80)])
	}
	var peer *amp.Error
	if e := amp.AsError(err); e == nil || e.Err == nil || !errors.As(e.Err, &peer) || peer.Code != amp.CodeInvalidMessage {
		t.Errorf("the provider's ERROR is not kept as the cause of stream_incomplete")
	}
}

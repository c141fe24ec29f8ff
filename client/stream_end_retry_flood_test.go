package client

import (
	"bytes"
	"context"
	"crypto/rand"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
)

// TestStreamEndRetryFlagMultipliesProbes: the attack: over a
// OneWay transport a hostile provider answers every STREAM_END with a
// signed 5002 ERROR that asks for a retry (retry: true) and says
// details.reason missing_chunks. docs/TRANSPORT.md §4 and endProbes bound
// the STREAM_ENDs of one phase to 30; each of the 30 probes was a Send
// whose retry loop resent it Retry.MaxAttempts times, so a stream cost the
// sender MaxAttempts × 30 STREAM_ENDs a phase (three phases: the open
// probe, the end, the end after the chunks are sent again; 305 with 5
// attempts) and as many backoff waits. Now every STREAM_END sent counts:
// at most endProbes a phase, whatever the answers ask
// (docs/SPEC-DECISIONS.md STREAM-10).
func TestStreamEndRetryFlagMultipliesProbes(t *testing.T) {
	p := newParties(t)
	var ends atomic.Int64
	tr := p.scripted(t, func(m *amp.Message, send *amp.Sender) ([]byte, error) {
		e, err := amp.DecodeStreamEnd(m.Body)
		if err != nil {
			return nil, err
		}
		ends.Add(1)
		details, err := amp.Marshal(map[string]string{"reason": "missing_chunks", "stream_id": e.StreamID})
		if err != nil {
			return nil, err
		}
		yes := true
		body, err := amp.Marshal(amp.ErrorBody{Code: amp.CodeUnavailable, Category: amp.CodeUnavailable.Category(), Message: "busy", Retry: &yes, Details: details})
		if err != nil {
			return nil, err
		}
		_, out, err := send.Seal(context.Background(), amp.Draft{Type: amp.TypeError, To: amp.To(m.From), ReplyTo: m.ID[:], Body: body})
		return out, err
	})
	c, err := New(Config{Identity: p.caller, Peer: p.provider.DID, Transport: dropOneWay{tr}, Now: p.clock.Now, Rand: rand.Reader,
		Retry: Retry{MaxAttempts: 5, Sleep: func(context.Context, time.Duration) error { return nil }}})
	if err != nil {
		t.Fatal(err)
	}
	content := bytes.Repeat([]byte("x"), 100)
	_, _, err = c.SendStream(context.Background(), Stream{Size: uint64(len(content)), ChunkSize: 32}, bytes.NewReader(content))
	if err == nil {
		t.Fatal("SendStream succeeded without a verified ACK")
	}
	if got, bound := ends.Load(), int64(3*endProbes); got > bound {
		t.Errorf("the provider's answers drew %d STREAM_ENDs from one stream, more than %d (%d per phase)", got, bound, endProbes)
	}
}

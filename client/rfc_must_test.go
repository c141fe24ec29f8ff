package client

// Tests for RFC 001 and RFC 004 requirements that docs/CONFORMANCE.md maps
// here, each named after its section.

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/capability"
)

// noSleep is a Retry that retries at once (no timed waits in tests).
var noSleep = Retry{MaxAttempts: 3, Sleep: func(context.Context, time.Duration) error { return nil }}

// scripted is a provider that verifies every message and lets answer
// decide the reply (nil: no reply) or a delivery error.
func (p *parties) scripted(t *testing.T, answer func(m *amp.Message, send *amp.Sender) ([]byte, error)) Transport {
	t.Helper()
	recv, err := amp.NewReceiver(amp.ReceiverConfig{Now: p.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	send, err := amp.NewSender(amp.SenderConfig{Identity: p.provider, Rand: rand.Reader, Now: p.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	return TransportFunc(func(ctx context.Context, raw []byte) ([]byte, error) {
		m, err := recv.Receive(ctx, raw)
		if err != nil {
			return nil, err
		}
		return answer(m, send)
	})
}

func (p *parties) client(t *testing.T, tr Transport) *Client {
	t.Helper()
	c, err := New(Config{Identity: p.caller, Peer: p.provider.DID, Transport: tr, Now: p.clock.Now, Rand: rand.Reader, Retry: noSleep})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestRFC001Section6_3SenderTreatsMissingStreamACKAsFailure: SendStream
// succeeds only on the provider's ACK for this stream_id with verified:
// true; no reply to STREAM_END, a delivery failure on every attempt, a
// reply of another type, an ACK for another stream or an ACK without
// verified: true are each a failure (threat: a sender that believes a
// transfer landed when the receiver never confirmed it, and drops its copy).
func TestRFC001Section6_3SenderTreatsMissingStreamACKAsFailure(t *testing.T) {
	yes, no := true, false
	ack := func(m *amp.Message, send *amp.Sender, b amp.AckBody) ([]byte, error) {
		b.AckSource, b.ReceivedAt = amp.AckFromRecipient, m.TS
		body, err := amp.Marshal(b)
		if err != nil {
			return nil, err
		}
		_, out, err := send.Seal(context.Background(), amp.Draft{Type: amp.TypeAck, To: amp.To(m.From), ReplyTo: m.ID[:], Body: body})
		return out, err
	}
	for _, c := range []struct {
		name string
		end  func(m *amp.Message, send *amp.Sender, id string) ([]byte, error)
		ok   bool
	}{
		{"verified ack", func(m *amp.Message, s *amp.Sender, id string) ([]byte, error) {
			return ack(m, s, amp.AckBody{StreamID: id, Verified: &yes})
		}, true},
		{"no reply", func(*amp.Message, *amp.Sender, string) ([]byte, error) { return nil, nil }, false},
		{"delivery fails every time", func(*amp.Message, *amp.Sender, string) ([]byte, error) {
			return nil, amp.NewError(amp.CodeTimeout, "no answer")
		}, false},
		{"pong instead of ack", func(m *amp.Message, s *amp.Sender, _ string) ([]byte, error) {
			_, out, err := s.Seal(context.Background(), amp.Draft{Type: amp.TypePong, To: amp.To(m.From), ReplyTo: m.ID[:]})
			return out, err
		}, false},
		{"ack for another stream", func(m *amp.Message, s *amp.Sender, _ string) ([]byte, error) {
			return ack(m, s, amp.AckBody{StreamID: "another", Verified: &yes})
		}, false},
		{"ack not verified", func(m *amp.Message, s *amp.Sender, id string) ([]byte, error) {
			return ack(m, s, amp.AckBody{StreamID: id, Verified: &no})
		}, false},
		{"ack without verified", func(m *amp.Message, s *amp.Sender, id string) ([]byte, error) {
			return ack(m, s, amp.AckBody{StreamID: id})
		}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := newParties(t)
			tr := p.scripted(t, func(m *amp.Message, send *amp.Sender) ([]byte, error) {
				if m.Type != amp.TypeStreamEnd {
					return nil, nil // START and DATA are not answered
				}
				e, err := amp.DecodeStreamEnd(m.Body)
				if err != nil {
					return nil, err
				}
				return c.end(m, send, e.StreamID)
			})
			content := bytes.Repeat([]byte("x"), 100)
			id, got, err := p.client(t, tr).SendStream(context.Background(), Stream{Size: uint64(len(content)), ChunkSize: 32}, bytes.NewReader(content))
			if c.ok {
				if err != nil || got == nil || got.StreamID != id {
					t.Fatalf("a verified ACK: %v %+v", err, got)
				}
				return
			}
			if err == nil {
				t.Fatalf("SendStream succeeded without a verified ACK for stream %s", id)
			}
		})
	}
}

// TestRFC004Section3RedeliveryKeepsTheInvocationBytes: when delivery of a
// CAP_INVOKE fails and the client sends it again, every attempt carries
// the same bytes (same id, same signature, same params), and the provider
// receives the body exactly as Invoke encoded it (threat: a redelivery
// that re-encodes, re-signs or re-negotiates, so a provider's ledger sees
// two different invocations, or the params that run differ from those
// signed).
func TestRFC004Section3RedeliveryKeepsTheInvocationBytes(t *testing.T) {
	p := newParties(t)
	id, err := capability.ParseID("org.example.x:1.2.0")
	if err != nil {
		t.Fatal(err)
	}
	inv := capability.Invoke{ID: id, Params: []byte{0xa2, 0x61, 0x61, 0x01, 0x61, 0x62, 0xfb, 0x3f, 0xf8, 0, 0, 0, 0, 0, 0}}
	want, err := inv.Encode()
	if err != nil {
		t.Fatal(err)
	}
	var attempts [][]byte
	inner := p.scripted(t, func(m *amp.Message, send *amp.Sender) ([]byte, error) {
		if !bytes.Equal(m.Body, want) {
			t.Errorf("the provider received body %x, Invoke encoded %x", m.Body, want)
		}
		body, err := capability.Result{Status: capability.StatusSuccess, Result: []byte{0xf6}}.Encode()
		if err != nil {
			return nil, err
		}
		_, out, err := send.Seal(context.Background(), amp.Draft{Type: amp.TypeCapResult, To: amp.To(m.From), ReplyTo: m.ID[:], Body: body})
		return out, err
	})
	tr := TransportFunc(func(ctx context.Context, raw []byte) ([]byte, error) {
		attempts = append(attempts, append([]byte(nil), raw...))
		if len(attempts) < 3 {
			return nil, amp.NewError(amp.CodeRelayRejected, "relay busy")
		}
		return inner.RoundTrip(ctx, raw)
	})
	if _, _, err := p.client(t, tr).Invoke(context.Background(), inv); err != nil {
		t.Fatal(err)
	}
	if len(attempts) != 3 {
		t.Fatalf("%d attempts, want 3", len(attempts))
	}
	for i, a := range attempts[1:] {
		if !bytes.Equal(a, attempts[0]) {
			t.Fatalf("attempt %d differs from the first", i+2)
		}
	}
}

// TestRFC004Section3TransportOutcomeDoesNotChangeCompatibility: a
// delivery failure is reported as that failure, never as a capability
// verdict (4002/4003/4004), and never makes the client invoke another
// version; a provider's 4003 is reported as 4003 and is not retried as if
// it were a delivery failure (threat: a flaky network read as "version
// not supported", or a client that falls back to another version because
// a relay was down).
func TestRFC004Section3TransportOutcomeDoesNotChangeCompatibility(t *testing.T) {
	p := newParties(t)
	id, err := capability.ParseID("org.example.x:2.0.0")
	if err != nil {
		t.Fatal(err)
	}
	inv := capability.Invoke{ID: id, Params: []byte{0xa0}}
	var invoked []string
	record := func(raw []byte) { invoked = append(invoked, string(raw)) }
	down := TransportFunc(func(_ context.Context, raw []byte) ([]byte, error) {
		record(raw)
		return nil, amp.NewError(amp.CodeUnavailable, "no route")
	})
	_, _, err = p.client(t, down).Invoke(context.Background(), inv)
	if amp.CodeOf(err) != amp.CodeUnavailable {
		t.Fatalf("a transport that is down: got %v, want its own 5002", err)
	}
	if len(invoked) != noSleep.MaxAttempts {
		t.Fatalf("%d attempts, want %d", len(invoked), noSleep.MaxAttempts)
	}
	for _, raw := range invoked[1:] {
		if raw != invoked[0] {
			t.Fatal("a delivery failure changed the invocation (another version or body)")
		}
	}
	served := 0
	mismatch := p.scripted(t, func(m *amp.Message, send *amp.Sender) ([]byte, error) {
		served++
		body, err := amp.Marshal(amp.ErrorBodyOf(amp.NewError(amp.CodeVersionMismatch, "no such version")))
		if err != nil {
			return nil, err
		}
		_, out, err := send.Seal(context.Background(), amp.Draft{Type: amp.TypeError, To: amp.To(m.From), ReplyTo: m.ID[:], Body: body})
		return out, err
	})
	_, _, err = p.client(t, mismatch).Invoke(context.Background(), inv)
	if amp.CodeOf(err) != amp.CodeVersionMismatch || served != 1 {
		t.Fatalf("a provider's 4003: got %v after %d attempts, want 4003 after 1", err, served)
	}
}

// TestRFC004Section6_5ClientTreatsCursorsAsOpaque: QueryAll hands back
// each next_cursor exactly as the provider wrote it, whatever it looks
// like (not base64, not ASCII, with separators and padding), and never
// builds one of its own (threat: a client that decodes, trims or edits a
// cursor and so reads another position, or another query, than the one
// it was given).
func TestRFC004Section6_5ClientTreatsCursorsAsOpaque(t *testing.T) {
	p := newParties(t)
	cursors := []string{"", "=?&cursor=0;offset=-1", "  spaced  ", "é\u2028\x00end", "a/b/../c==", ""}
	var pp pagingProvider
	tr := pp.transport(t, p, 2, 1, func(n int) string { return cursors[n] })
	c := pagingClient(t, p, tr, QueryLimits{})
	got, err := c.QueryAll(context.Background(), queryX)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2*(len(cursors)-1) {
		t.Fatalf("%d descriptors, want %d", len(got), 2*(len(cursors)-1))
	}
	if len(pp.cursors) != len(cursors)-1 {
		t.Fatalf("%d queries, want %d", len(pp.cursors), len(cursors)-1)
	}
	for i, cur := range pp.cursors {
		if cur != cursors[i] {
			t.Fatalf("query %d sent cursor %q, the provider gave %q", i+1, cur, cursors[i])
		}
	}
}

// TestRFC004Section6_3NegotiationIsNeverServedFromAStaleCache: the client
// keeps no negotiation cache (docs/SPEC-DECISIONS.md CAP-5): every Query
// reaches the provider, so after the provider withdraws a version the
// next query sees the change (threat: a sender that keeps invoking a
// version the provider no longer offers because an old answer was cached).
func TestRFC004Section6_3NegotiationIsNeverServedFromAStaleCache(t *testing.T) {
	p := newParties(t)
	offered := "2.0.0"
	queries := 0
	ref := capability.SchemaRef{URI: "https://x.example/s", HashAlg: "sha-256", Hash: make([]byte, 32)}
	tr := p.scripted(t, func(m *amp.Message, send *amp.Sender) ([]byte, error) {
		queries++
		v, err := capability.ParseVersion(offered)
		if err != nil {
			return nil, err
		}
		body, err := capability.Declare{Capabilities: []capability.Descriptor{{Name: "org.example.x", Version: v, InputSchema: ref, OutputSchema: ref}}}.Encode()
		if err != nil {
			return nil, err
		}
		_, out, err := send.Seal(context.Background(), amp.Draft{Type: amp.TypeCapDeclare, To: amp.To(m.From), ReplyTo: m.ID[:], Body: body})
		return out, err
	})
	c := p.client(t, tr)
	for i, want := range []string{"2.0.0", "1.5.0"} {
		offered = want
		d, _, err := c.Query(context.Background(), queryX)
		if err != nil {
			t.Fatal(err)
		}
		if queries != i+1 {
			t.Fatalf("query %d was answered without asking the provider", i+1)
		}
		if got := d.Capabilities[0].Version.String(); got != want {
			t.Fatalf("query %d: version %s, the provider offers %s", i+1, got, want)
		}
	}
}

// TestRFC004Section6_1QueryAllKeepsFilterAndOrderAcrossPages: every page
// QueryAll asks for repeats the first query's filter (capability, version
// range), order and limit; only the cursor changes (threat: a requester
// that drifts between pages and so reads a mix of two result sets, which
// the provider would have to refuse as a context mismatch).
func TestRFC004Section6_1QueryAllKeepsFilterAndOrderAcrossPages(t *testing.T) {
	p := newParties(t)
	rng, err := capability.ParseRange(">=1.0.0 <3.0.0")
	if err != nil {
		t.Fatal(err)
	}
	limit := uint64(1)
	q := capability.Query{Filter: capability.Filter{Capability: "org.example.x", Version: rng}, Limit: &limit, Order: capability.OrderOldestFirst}
	ref := capability.SchemaRef{URI: "https://x.example/s", HashAlg: "sha-256", Hash: make([]byte, 32)}
	var contexts [][]byte
	tr := p.scripted(t, func(m *amp.Message, send *amp.Sender) ([]byte, error) {
		got, err := capability.DecodeQuery(m.Body)
		if err != nil {
			return nil, err
		}
		got.Cursor = ""
		ctx, err := got.Encode()
		if err != nil {
			return nil, err
		}
		contexts = append(contexts, ctx)
		v, _ := capability.ParseVersion(fmt.Sprintf("1.%d.0", len(contexts)))
		next := ""
		if len(contexts) < 4 {
			next = fmt.Sprintf("page-%d", len(contexts)+1)
		}
		body, err := capability.Declare{Capabilities: []capability.Descriptor{{Name: "org.example.x", Version: v, InputSchema: ref, OutputSchema: ref}}, NextCursor: next}.Encode()
		if err != nil {
			return nil, err
		}
		_, out, err := send.Seal(context.Background(), amp.Draft{Type: amp.TypeCapDeclare, To: amp.To(m.From), ReplyTo: m.ID[:], Body: body})
		return out, err
	})
	if _, err := p.client(t, tr).QueryAll(context.Background(), q); err != nil {
		t.Fatal(err)
	}
	if len(contexts) != 4 {
		t.Fatalf("%d pages asked for, want 4", len(contexts))
	}
	for i, c := range contexts[1:] {
		if !bytes.Equal(c, contexts[0]) {
			t.Fatalf("page %d changed the query context: %x, first %x", i+2, c, contexts[0])
		}
	}
}

// TestRFC001Section16_1AckWithABrokenSignatureConfirmsNothing: an ACK
// must be signed by its `from`. The same ACK verifies and confirms the
// request when intact; with one bit of its signature flipped it is
// refused (1002) and the outbox does not mark the request answered
// (threat: a forged "received" that stops the sender's retries).
func TestRFC001Section16_1AckWithABrokenSignatureConfirmsNothing(t *testing.T) {
	for _, broken := range []bool{false, true} {
		p := newParties(t)
		ob := mustOutbox(t, OutboxConfig{Now: p.clock.Now})
		tr := p.scripted(t, func(m *amp.Message, send *amp.Sender) ([]byte, error) {
			body, err := amp.Marshal(amp.AckBody{AckSource: amp.AckFromRecipient, ReceivedAt: m.TS})
			if err != nil {
				return nil, err
			}
			ack, out, err := send.Seal(context.Background(), amp.Draft{Type: amp.TypeAck, To: amp.To(m.From), ReplyTo: m.ID[:], Body: body})
			if err != nil || !broken {
				return out, err
			}
			ack.Sig[len(ack.Sig)-1] ^= 1
			return ack.Encode(), nil
		})
		c, err := New(Config{Identity: p.caller, Peer: p.provider.DID, Transport: tr, Now: p.clock.Now, Rand: rand.Reader, Retry: noSleep, Outbox: ob})
		if err != nil {
			t.Fatal(err)
		}
		ex, err := c.Do(context.Background(), amp.TypeMessage, nil)
		st, _ := ob.State(ex.Request.ID)
		if !broken {
			if err != nil || st.State != OutDelivered { // delivered, not answered (REPORT-4)
				t.Fatalf("an intact ACK: %v, state %d", err, st.State)
			}
			continue
		}
		if !errors.Is(err, amp.CodeInvalidSignature) {
			t.Fatalf("an ACK with a broken signature: got %v, want 1002", err)
		}
		if st.State != OutSent {
			t.Fatalf("an ACK with a broken signature moved the request to state %d", st.State)
		}
	}
}

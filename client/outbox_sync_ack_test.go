package client

import (
	"context"
	"crypto/rand"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/capability"
)

// TestSynchronousAckDoesNotCloseTheOutboxEntry: an agent answers a
// CAP_INVOKE with a synchronous recipient ACK (delivered, to be processed
// later) and then reports PROC_FAIL. Were the ACK taken as a final answer
// (OutAnswered), Outbox.Receive would ignore the PROC_FAIL and the
// caller's outbox say the invocation was answered while it failed. An ACK
// reply sets OutDelivered, as the same ACK arriving on its own does
// (RFC 001 §16.5, REPORT-4), leaving room for the final report.
func TestSynchronousAckDoesNotCloseTheOutboxEntry(t *testing.T) {
	p := newParties(t)
	ob := mustOutbox(t, OutboxConfig{Now: p.clock.Now})
	var provider *amp.Sender
	tr := p.scripted(t, func(m *amp.Message, send *amp.Sender) ([]byte, error) {
		provider = send
		body, err := amp.Marshal(amp.AckBody{AckSource: amp.AckFromRecipient, ReceivedAt: m.TS})
		if err != nil {
			return nil, err
		}
		_, out, err := send.Seal(context.Background(), amp.Draft{Type: amp.TypeAck, To: amp.To(m.From), ReplyTo: m.ID[:], Body: body})
		return out, err
	})
	c, err := New(Config{Identity: p.caller, Peer: p.provider.DID, Transport: tr, Now: p.clock.Now, Rand: rand.Reader, Retry: noSleep, Outbox: ob})
	if err != nil {
		t.Fatal(err)
	}
	v, _ := capability.ParseVersion("1.0.0")
	_, ex, _ := c.Invoke(context.Background(), capability.Invoke{Capability: "org.example.x", Version: v, Params: []byte{0xa0}})
	if ex == nil || ex.Request == nil {
		t.Fatal("no exchange")
	}
	id := ex.Request.ID
	if st, _ := ob.State(id); st.State != OutDelivered {
		t.Errorf("state after a synchronous ACK = %d, want OutDelivered (%d)", st.State, OutDelivered)
	}
	fb, err := amp.Marshal(amp.ProcFailBody{})
	if err != nil {
		t.Fatal(err)
	}
	fail, _, err := provider.Seal(context.Background(), amp.Draft{Type: amp.TypeProcFail, To: amp.To(p.caller.DID), ReplyTo: id[:], Body: fb})
	if err != nil {
		t.Fatal(err)
	}
	if !ob.Receive(context.Background(), amp.Receipt{Message: fail}) {
		t.Error("the provider's PROC_FAIL after its ACK was ignored")
	}
	if st, _ := ob.State(id); st.State != OutFailed {
		t.Errorf("state after PROC_FAIL = %d, want OutFailed (%d)", st.State, OutFailed)
	}
}

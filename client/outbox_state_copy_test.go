package client

import (
	"context"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
)

// TestOutboxEntryEditedThroughACopyIsUnchanged: Outbox.State returned the
// entry with its recipients (To.DIDs) and its report summary shared, and
// Add kept the caller's message's recipients as they were passed (the
// Exchange's Request is that message): a caller that edited what it was
// handed, or reused its message, edited the outbox's entry, whose
// recipients the ACK rules (amp.CheckAck) and the relays of an ACK are
// read from. State and Add now copy them.
func TestOutboxEntryEditedThroughACopyIsUnchanged(t *testing.T) {
	cases := []struct {
		name string
		edit func(m *amp.Message, st Outbound)
	}{
		{"State's recipients", func(_ *amp.Message, st Outbound) { st.To.DIDs[0] = "did:example:other" }},
		{"State's report", func(_ *amp.Message, st Outbound) { st.Report.ReplyTo[0] ^= 0xff; st.Report.ThreadID[0] ^= 0xff }},
		{"the added message's recipients", func(m *amp.Message, _ Outbound) { m.To.DIDs[0] = "did:example:other" }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := newParties(t)
			ob := mustOutbox(t, OutboxConfig{Now: p.clock.Now})
			m := p.seal(t, p.caller, amp.TypePing, nil)
			if err := ob.Add(m); err != nil {
				t.Fatal(err)
			}
			report := &amp.Message{Type: amp.TypeProcOK, From: p.provider.DID, To: amp.To(p.caller.DID),
				ReplyTo: m.ID[:], ThreadID: []byte("thread")}
			if !ob.Receive(context.Background(), amp.Receipt{Message: report}) {
				t.Fatal("the report was not used")
			}
			st, _ := ob.State(m.ID)
			c.edit(m, st)
			got, _ := ob.State(m.ID)
			if len(got.To.DIDs) != 1 || got.To.DIDs[0] != p.provider.DID {
				t.Errorf("the entry's recipients are now %q", got.To.DIDs)
			}
			if string(got.Report.ReplyTo) != string(m.ID[:]) || string(got.Report.ThreadID) != "thread" {
				t.Errorf("the entry's report is now reply_to %x, thread_id %q", got.Report.ReplyTo, got.Report.ThreadID)
			}
		})
	}
}

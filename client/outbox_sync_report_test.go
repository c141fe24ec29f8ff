package client

import (
	"context"
	"crypto/rand"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/capability"
)

// TestSynchronousProvisionalOrReportReplyCannotHideAFailure: a provider
// answers a CAP_INVOKE, synchronously, with a PROCESSING (RFC 001 §5,
// 0x09: a long operation in progress, a provisional answer) or with a
// report (PROC_OK, PROC_FAIL). Taken as the answer (OutAnswered, final),
// the PROCESSING closed the entry and the PROC_FAIL that followed was
// ignored, and a synchronous PROC_FAIL itself left the entry answered,
// not failed: the caller's outbox said "answered" of an invocation that
// failed. A PROCESSING changes nothing, as it does when it arrives on
// its own (Outbox.Receive); a report is the peer's report, for its own
// recipient, as it would be on its own (docs/SPEC-DECISIONS.md AMP-19).
func TestSynchronousProvisionalOrReportReplyCannotHideAFailure(t *testing.T) {
	for _, tc := range []struct {
		name      string
		reply     amp.Type
		body      any
		then      amp.Type // a report that arrives afterwards (0: none)
		wantAfter OutState // once the reply is recorded
		wantFinal OutState // once the later report (if any) is received
	}{
		{name: "processing then proc_fail", reply: amp.TypeProcessing, then: amp.TypeProcFail, wantAfter: OutSent, wantFinal: OutFailed},
		{name: "processing then proc_ok", reply: amp.TypeProcessing, then: amp.TypeProcOK, wantAfter: OutSent, wantFinal: OutProcessed},
		{name: "synchronous proc_fail", reply: amp.TypeProcFail, body: amp.ProcFailBody{}, wantAfter: OutFailed, wantFinal: OutFailed},
		{name: "synchronous proc_ok", reply: amp.TypeProcOK, body: amp.ProcOKBody{}, wantAfter: OutProcessed, wantFinal: OutProcessed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newParties(t)
			ob := mustOutbox(t, OutboxConfig{Now: p.clock.Now})
			var provider *amp.Sender
			tr := p.scripted(t, func(m *amp.Message, send *amp.Sender) ([]byte, error) {
				provider = send
				var body []byte
				if tc.body != nil {
					var err error
					if body, err = amp.Marshal(tc.body); err != nil {
						return nil, err
					}
				}
				_, out, err := send.Seal(context.Background(), amp.Draft{Type: tc.reply, To: amp.To(m.From), ReplyTo: m.ID[:], Body: body})
				return out, err
			})
			c, err := New(Config{Identity: p.caller, Peer: p.provider.DID, Transport: tr, Now: p.clock.Now, Rand: rand.Reader, Retry: noSleep, Outbox: ob})
			if err != nil {
				t.Fatal(err)
			}
			v, _ := capability.ParseVersion("1.0.0")
			_, ex, _ := c.Invoke(context.Background(), capability.Invoke{Capability: "org.example.x", Version: v, Params: []byte{0xa0}})
			if ex == nil || ex.Request == nil || ex.Reply == nil || ex.Reply.Type != tc.reply {
				t.Fatalf("no verified %s reply: %+v", tc.reply.Name(), ex)
			}
			id := ex.Request.ID
			if st, _ := ob.State(id); st.State != tc.wantAfter {
				t.Errorf("state after a synchronous %s = %d, want %d", tc.reply.Name(), st.State, tc.wantAfter)
			}
			if tc.then != 0 {
				var body []byte
				if tc.then == amp.TypeProcFail {
					body, err = amp.Marshal(amp.ProcFailBody{})
				} else {
					body, err = amp.Marshal(amp.ProcOKBody{})
				}
				if err != nil {
					t.Fatal(err)
				}
				r, _, err := provider.Seal(context.Background(), amp.Draft{Type: tc.then, To: amp.To(p.caller.DID), ReplyTo: id[:], Body: body})
				if err != nil {
					t.Fatal(err)
				}
				if !ob.Receive(context.Background(), amp.Receipt{Message: r}) {
					t.Errorf("the provider's %s after its synchronous %s was ignored", tc.then.Name(), tc.reply.Name())
				}
			}
			st, _ := ob.State(id)
			if st.State != tc.wantFinal {
				t.Errorf("final state = %d, want %d", st.State, tc.wantFinal)
			}
			if tc.wantFinal == OutFailed && (st.Report == nil || st.Report.Type != amp.TypeProcFail) {
				t.Errorf("a failed entry's Report = %+v, want the PROC_FAIL", st.Report)
			}
		})
	}
}

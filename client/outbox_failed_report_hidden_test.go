package client

import (
	"context"
	"crypto/rand"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
)

// TestLaterReportCannotHideARecipientsFailure: a message names two
// recipients; one answers PROC_FAIL, then the other (hostile, or merely
// later) sends a recipient ACK and a PROC_OK. The entry is OutFailed
// (TRANSPORT-19), but its Report was the last report to arrive: the ACK
// replaced the failure's while the other had not reported, and the
// PROC_OK then left a failed entry whose Report said "processed", from a
// recipient that had not failed, so a sender reading Report to learn who
// failed learnt nothing, and one recipient hid another's failure. A
// failed entry's Report is now the first failure's (a later failure
// does not replace it either), and an ACK never replaces a final report
// (TRANSPORT-19, amended in review 114).
func TestLaterReportCannotHideARecipientsFailure(t *testing.T) {
	p := newParties(t)
	ob := mustOutbox(t, OutboxConfig{Max: 8, Now: p.clock.Now})
	s, err := amp.NewSender(amp.SenderConfig{Identity: p.caller, Rand: rand.Reader, Now: p.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	report := func(req *amp.Message, from amp.Identity, typ amp.Type, body any) {
		t.Helper()
		b, err := amp.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rs, err := amp.NewSender(amp.SenderConfig{Identity: from, Rand: rand.Reader, Now: p.clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		m, _, err := rs.Seal(context.Background(), amp.Draft{Type: typ, To: amp.To(p.caller.DID), ReplyTo: req.ID[:], Body: b})
		if err != nil {
			t.Fatal(err)
		}
		if !ob.Receive(context.Background(), Receipt{Message: m}) {
			t.Fatalf("the %v from %s was not used", typ, from.DID)
		}
	}
	for _, c := range []struct {
		name  string
		typ   amp.Type
		body  any
		state OutState
	}{
		{"the other's ACK", amp.TypeAck, amp.AckBody{AckSource: amp.AckFromRecipient, ReceivedAt: 1}, OutDelivered},
		{"the other's PROC_OK", amp.TypeProcOK, map[string]any{}, OutFailed},
		{"the other's ERROR", amp.TypeError, amp.ErrorBodyOf(amp.NewError(amp.CodeInternalError, "x")), OutFailed},
	} {
		req, _, err := s.Seal(context.Background(), amp.Draft{Type: amp.TypePing, To: amp.ToList(p.provider.DID, p.stranger.DID)})
		if err != nil {
			t.Fatal(err)
		}
		if err := ob.Add(req); err != nil {
			t.Fatal(err)
		}
		report(req, p.stranger, amp.TypeProcFail, map[string]any{})
		report(req, p.provider, c.typ, c.body)
		st, _ := ob.State(req.ID)
		if st.State != c.state || st.Report == nil || st.Report.Type != amp.TypeProcFail || st.Report.From != p.stranger.DID {
			t.Fatalf("after %s: state %d, report %+v, want state %d and the failure's report (PROC_FAIL from %s)",
				c.name, st.State, st.Report, c.state, p.stranger.DID)
		}
	}
}

package client

import (
	"context"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
)

// TestRecipientReportAfterRelayRefusalStillSettles: a relay's final
// refusal frees the recipients' shares but is no word of theirs. Had it
// settled them as answered (OutAnswered, or a report of theirs), the
// report of a recipient that got the message by another path (another
// relay, a lying relay that forwarded it all the same) would be ignored
// and the sender would read a refusal where the recipient processed or
// failed it. Each recipient's own report still settles it as it would
// have: the entry is OutProcessed once every recipient said PROC_OK,
// OutFailed while one is left refused or one failed, and its Report is
// the recipient's (docs/SPEC-DECISIONS.md TRANSPORT-25). Reports from
// anyone else (the relay itself) stay ignored.
func TestRecipientReportAfterRelayRefusalStillSettles(t *testing.T) {
	type step struct {
		from  int // 0: bob, 1: carol, 2: the relay
		typ   amp.Type
		used  bool
		state OutState
	}
	for _, c := range []struct {
		name  string
		n     int // recipients: bob, or bob and carol
		steps []step
	}{
		{"one recipient's PROC_OK", 1, []step{{0, amp.TypeProcOK, true, OutProcessed}}},
		{"one recipient's PROC_FAIL", 1, []step{{0, amp.TypeProcFail, true, OutFailed}}},
		{"one recipient's ERROR", 1, []step{{0, amp.TypeError, true, OutFailed}}},
		{"the relay's own PROC_OK", 1, []step{{2, amp.TypeProcOK, false, OutFailed}, {0, amp.TypeProcOK, true, OutProcessed}}},
		{"two recipients, both PROC_OK", 2, []step{{0, amp.TypeProcOK, true, OutFailed}, {1, amp.TypeProcOK, true, OutProcessed}}},
		{"two recipients, one PROC_FAIL", 2, []step{{1, amp.TypeProcFail, true, OutFailed}, {0, amp.TypeProcOK, true, OutFailed}}},
		{"a recipient reports once", 2, []step{{0, amp.TypeProcOK, true, OutFailed}, {0, amp.TypeProcFail, false, OutFailed}, {1, amp.TypeProcOK, true, OutProcessed}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newRelayFixture(t, 1)
			f.refuse(t, errBody(amp.CodeInvalidMessage, &no))
			rcpts := []amp.Identity{f.bob, f.carol}[:c.n]
			req, msg := f.seal(t, rcpts...)
			if _, err := f.cl.Send(context.Background(), req, msg); amp.CodeOf(err) != amp.CodeInvalidMessage {
				t.Fatalf("Send: %v, want the relay's final refusal", err)
			}
			if st := f.state(req.ID); st.State != OutFailed || st.Report != nil {
				t.Fatalf("after the relay's final refusal: state %d, report %+v, want OutFailed (%d) and no report", st.State, st.Report, OutFailed)
			}
			who := []amp.Identity{f.bob, f.carol, f.p.provider}
			var failed *amp.Message
			for i, s := range c.steps {
				if used := f.report(t, who[s.from], s.typ, req.ID); used != s.used {
					t.Fatalf("step %d: %s from %s used %v, want %v", i+1, s.typ.Name(), who[s.from].DID, used, s.used)
				}
				st := f.state(req.ID)
				if st.State != s.state {
					t.Fatalf("step %d: after %s from %s: state %d, want %d", i+1, s.typ.Name(), who[s.from].DID, st.State, s.state)
				}
				if s.used && s.typ != amp.TypeProcOK && failed == nil {
					failed = st.Report
				}
				// The Report is a recipient's, never the relay's.
				if st.Report != nil && st.Report.From == f.p.provider.DID {
					t.Fatalf("step %d: the entry's Report is the relay's: %+v", i+1, st.Report)
				}
				if failed != nil && (st.Report == nil || st.Report.ID != failed.ID) {
					t.Fatalf("step %d: the Report is not the first failure's", i+1)
				}
			}
			// A report takes no share again: the recipients' shares are free.
			for _, rc := range rcpts {
				if f.shareFull(t, rc) {
					t.Errorf("a message to %s after its report on a refused message: refused recipient_outbox_full", rc.DID)
				}
			}
		})
	}
}

// TestRelayRefusalAfterDeliveryFreesNothing: once an ACK that passed
// the RFC 001 §16.1 rules said the message was accepted for delivery
// (the relay's own, or a recipient's), a later final refusal (of the
// caller's retry of the same message: a relay that already holds it may
// refuse the copy) does not say the message will not be delivered. Were
// it to end the entry, a relay could ACK a message, then refuse its
// retry, and the sender would stop waiting for the reports of a message
// on its way. The entry stays OutDelivered with its shares held
// (docs/SPEC-DECISIONS.md TRANSPORT-25).
func TestRelayRefusalAfterDeliveryFreesNothing(t *testing.T) {
	for _, c := range []struct {
		name     string
		relayAck bool // the relay ACKs the first attempt; else bob ACKs on his own path
	}{
		{"the relay's ACK", true},
		{"the recipient's ACK", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newRelayFixture(t, 1)
			req, msg := f.seal(t, f.bob)
			if c.relayAck {
				ack, _ := amp.Marshal(amp.AckBody{AckSource: amp.AckFromRelay, ReceivedAt: 1})
				f.answer = func(m *amp.Message, send *amp.Sender) ([]byte, error) {
					_, out, err := send.Seal(context.Background(), amp.Draft{Type: amp.TypeAck, To: amp.To(m.From), ReplyTo: m.ID[:], Body: ack})
					return out, err
				}
				if _, err := f.cl.Send(context.Background(), req, msg); err != nil {
					t.Fatal(err)
				}
			} else {
				if err := f.ob.Add(req); err != nil {
					t.Fatal(err)
				}
				if !f.report(t, f.bob, amp.TypeAck, req.ID) {
					t.Fatal("bob's ACK was not matched")
				}
			}
			if st := f.state(req.ID); st.State != OutDelivered {
				t.Fatalf("after the ACK: state %d, want OutDelivered", st.State)
			}
			f.refuse(t, errBody(amp.CodeInvalidMessage, &no))
			if _, err := f.cl.Send(context.Background(), req, msg); amp.CodeOf(err) != amp.CodeInvalidMessage {
				t.Fatalf("the retry: %v, want the relay's final refusal", err)
			}
			if st := f.state(req.ID); st.State != OutDelivered {
				t.Fatalf("a final refusal after the ACK: state %d, want OutDelivered (%d): the relay ended a message accepted for delivery", st.State, OutDelivered)
			}
			if !f.shareFull(t, f.bob) {
				t.Error("a message to bob while the delivered one awaits his report: taken, want recipient_outbox_full")
			}
			if !f.report(t, f.bob, amp.TypeProcOK, req.ID) || f.state(req.ID).State != OutProcessed {
				t.Errorf("bob's PROC_OK: state %d, want OutProcessed", f.state(req.ID).State)
			}
		})
	}
}

// TestRetryAfterRelayRefusalTakesTheSharesAgain: the caller may send a
// message a relay refused for good again (through another relay, or the
// same once it changed its mind). The retry puts the refused recipients
// back in flight: the entry is open again and holds their shares, so
// that the refusal is no way around the share, and the next relay's ACK
// and the reports are matched. A retry into a full share is refused
// recipient_outbox_full, as a new message would be, and reopens nothing
// (docs/SPEC-DECISIONS.md TRANSPORT-25, as TRANSPORT-22 reopens a
// retryable answer).
func TestRetryAfterRelayRefusalTakesTheSharesAgain(t *testing.T) {
	refused := func(t *testing.T) (*relayFixture, *amp.Message) {
		f := newRelayFixture(t, 1)
		f.refuse(t, errBody(amp.CodeContactDenied, nil))
		req, msg := f.seal(t, f.bob, f.carol)
		if _, err := f.cl.Send(context.Background(), req, msg); amp.CodeOf(err) != amp.CodeContactDenied {
			t.Fatalf("Send: %v, want the relay's final refusal", err)
		}
		// bob reported (the message reached him by another path);
		// carol is left refused.
		if !f.report(t, f.bob, amp.TypeProcOK, req.ID) {
			t.Fatal("bob's PROC_OK after the refusal was ignored")
		}
		return f, req
	}
	t.Run("reopens the refused recipients", func(t *testing.T) {
		f, req := refused(t)
		if err := f.ob.Add(req); err != nil {
			t.Fatalf("the retry: %v", err)
		}
		if st := f.state(req.ID); st.State != OutDelivered {
			t.Fatalf("after the retry: state %d, want OutDelivered (%d): bob reported, carol is in flight again", st.State, OutDelivered)
		}
		if !f.shareFull(t, f.carol) {
			t.Error("a message to carol while the retried one is in flight: taken, want recipient_outbox_full")
		}
		if f.shareFull(t, f.bob) {
			t.Error("a message to bob, who reported: refused recipient_outbox_full")
		}
		if !f.report(t, f.carol, amp.TypeProcOK, req.ID) || f.state(req.ID).State != OutProcessed {
			t.Errorf("carol's PROC_OK on the retried message: state %d, want OutProcessed", f.state(req.ID).State)
		}
	})
	t.Run("not into a full share", func(t *testing.T) {
		f, req := refused(t)
		other, _ := f.seal(t, f.carol)
		if err := f.ob.Add(other); err != nil {
			t.Fatalf("another message to carol once the relay refused the first: %v, want it taken", err)
		}
		if err := f.ob.Add(req); amp.NameOf(err) != ErrRecipientOutboxFull {
			t.Fatalf("the retry while carol's share is full: %v, want recipient_outbox_full", err)
		}
		// The refused entry was final: the refusal's sweep may have
		// dropped it; it must not be open.
		if st, ok := f.ob.State(req.ID); ok && st.State != OutFailed {
			t.Errorf("state after a refused retry = %d, want OutFailed (%d) or dropped", st.State, OutFailed)
		}
	})
}

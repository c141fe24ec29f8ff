package agent

import (
	"context"

	"github.com/ampbundle/ampbundle/amp"
)

// isReport reports whether typ is a report that is never answered: an
// ERROR or ACK answered with an ERROR would let two agents bounce errors
// forever on an asynchronous path.
func isReport(typ amp.Type) bool {
	switch typ {
	case amp.TypeAck, amp.TypeProcOK, amp.TypeProcFail, amp.TypeError, amp.TypeProcessing:
		return true
	}
	return false
}

// handleReport takes a verified report: it is checked and handed to
// Config.Receipts, and never answered (no reply, whatever is wrong with
// it; what is wrong is logged).
func (a *Agent) handleReport(ctx context.Context, m *amp.Message) {
	if !m.To.Contains(a.cfg.Identity.DID) {
		a.log.Warn("report not addressed to this agent: dropped", "from", m.From, "id", m.ID.String(), "typ", m.Type.Name())
		return
	}
	if m.ReplyTo == nil {
		a.log.Info("report without reply_to: dropped", "from", m.From, "id", m.ID.String(), "typ", m.Type.Name())
		return
	}
	r := amp.Receipt{Message: m}
	var err error
	switch m.Type {
	case amp.TypeAck:
		var b amp.AckBody
		if b, err = amp.DecodeAck(m.Body); err == nil {
			r.Ack = &b
		}
	case amp.TypeProcOK:
		_, err = amp.DecodeProcOK(m.Body)
	case amp.TypeProcFail:
		_, err = amp.DecodeProcFail(m.Body)
	case amp.TypeError:
		var b amp.ErrorBody
		if b, err = amp.DecodeError(m.Body); err == nil {
			r.Error = &b
		}
	}
	if err != nil {
		a.log.Info("malformed report: dropped", "from", m.From, "id", m.ID.String(), "typ", m.Type.Name(), "name", string(amp.NameOf(err)))
		return
	}
	a.log.Info("report received", "from", m.From, "id", m.ID.String(), "typ", m.Type.Name())
	if a.cfg.Receipts != nil {
		a.cfg.Receipts(ctx, r)
	}
}

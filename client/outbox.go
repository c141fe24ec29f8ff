package client

import (
	"context"
	"sync"
	"time"

	"github.com/ampbundle/ampbundle/amp"
)

// OutState is where an outbound message stands (RFC 001 §16.5).
type OutState int

// Outbound message states. Delivered, Processed and Failed come from
// reports; Answered from a synchronous reply; Expired from the clock.
const (
	OutSent      OutState = iota // sent, nothing heard yet
	OutDelivered                 // an ACK that passed the §16.1 rules
	OutProcessed                 // PROC_OK
	OutFailed                    // PROC_FAIL or ERROR
	OutAnswered                  // a verified synchronous reply
	OutExpired                   // ts + ttl passed with no final report
)

// Outbound is the state of one outbound message.
type Outbound struct {
	ID      amp.ID
	To      amp.Recipients
	Expires time.Time
	State   OutState
	// Report is the last report that changed the state (nil for none).
	Report *amp.Message
}

// Outbox keeps a sender's outbound messages until they are confirmed
// (processed, failed or answered) or expire (RFC 001 §16.5), and matches
// the reports that arrive about them: Receive fits agent.Config.Receipts. An ACK
// must pass the §16.1 rules (amp.CheckAck: a recipient ACK from a
// recipient of the original, a relay ACK from a trusted relay); a PROC_*
// or ERROR must come from a recipient of the original. A report that
// matches nothing, or breaks a rule, changes nothing. At most max
// messages are kept; expired and confirmed ones make room first. Safe for
// concurrent use.
type Outbox struct {
	mu     sync.Mutex
	max    int
	now    func() time.Time
	relays []string
	m      map[amp.ID]*Outbound
}

// NewOutbox returns an Outbox of at most max messages (default 65,536)
// with the clock now and the DIDs of the relays trusted to ACK.
func NewOutbox(max int, now func() time.Time, trustedRelays []string) *Outbox {
	if max <= 0 {
		max = 1 << 16
	}
	return &Outbox{max: max, now: now, relays: trustedRelays, m: map[amp.ID]*Outbound{}}
}

func final(s OutState) bool { return s == OutProcessed || s == OutFailed || s == OutAnswered }

// Add records a message just sent. A full outbox (after dropping what is
// confirmed or expired) is 5004 outbox_full, retryable.
func (o *Outbox) Add(m *amp.Message) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, ok := o.m[m.ID]; ok {
		return nil // a retry of the same message
	}
	if len(o.m) >= o.max {
		now := o.now()
		for id, e := range o.m {
			if final(e.State) || now.After(e.Expires) {
				delete(o.m, id)
			}
		}
		if len(o.m) >= o.max {
			return amp.Named(amp.CodeOverloaded, "outbox_full", "%d messages await confirmation; retry later", o.max)
		}
	}
	ttl := time.Duration(m.TTL) * time.Millisecond
	o.m[m.ID] = &Outbound{ID: m.ID, To: m.To, Expires: time.UnixMilli(int64(m.TS)).Add(ttl), State: OutSent}
	return nil
}

// State returns the state of the outbound message id.
func (o *Outbox) State(id amp.ID) (Outbound, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	e, ok := o.m[id]
	if !ok {
		return Outbound{}, false
	}
	out := *e
	if !final(out.State) && o.now().After(out.Expires) {
		out.State = OutExpired
	}
	return out, true
}

// Answered records a verified synchronous reply to id.
func (o *Outbox) Answered(id amp.ID) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if e, ok := o.m[id]; ok {
		e.State = OutAnswered
	}
}

// Receive matches a report to its outbound message. It never fails: a
// report it cannot use is ignored (it reports whether it was used).
func (o *Outbox) Receive(_ context.Context, r Receipt) bool {
	m := r.Message
	if len(m.ReplyTo) != len(amp.ID{}) {
		return false
	}
	var id amp.ID
	copy(id[:], m.ReplyTo)
	o.mu.Lock()
	defer o.mu.Unlock()
	e, ok := o.m[id]
	if !ok || final(e.State) {
		return false
	}
	switch m.Type {
	case amp.TypeAck:
		if _, err := amp.CheckAck(m, e.To, o.relays); err != nil {
			return false
		}
		e.State, e.Report = OutDelivered, m
		return true
	case amp.TypeProcOK, amp.TypeProcFail, amp.TypeError:
		if !e.To.Contains(m.From) {
			return false
		}
		e.State, e.Report = OutProcessed, m
		if m.Type != amp.TypeProcOK {
			e.State = OutFailed
		}
		return true
	}
	return false // PROCESSING changes nothing here
}

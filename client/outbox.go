package client

import (
	"context"
	"sync"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/internal/limit"
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
// the reports that arrive about them: Receive fits agent.Config.Receipts.
// An ACK must pass the §16.1 rules (amp.CheckAck: a recipient ACK from a
// recipient of the original, a relay ACK from a relay the sender's or the
// recipient's DID document lists as an AgentMessagingRelay service, or
// one the operator configured); a PROC_* or ERROR must come from a
// recipient of the original. A report that matches nothing, or breaks a
// rule, changes nothing. At most Max messages are kept; expired and
// confirmed ones make room first. Safe for concurrent use.
type Outbox struct {
	mu       sync.Mutex
	max      int
	now      func() time.Time
	always   []string            // relays trusted for every message
	relaysOf map[string][]string // recipient DID -> relays its document lists
	m        map[amp.ID]*Outbound
}

// OutboxConfig configures an Outbox.
type OutboxConfig struct {
	// Max bounds the messages kept (default 65,536).
	Max int
	// Now is the clock. Required.
	Now func() time.Time
	// Self is the sender's own DID document, when it has one: the relays
	// its AgentMessagingRelay services name may ACK any of its messages.
	Self *amp.DIDDocument
	// Documents are the recipients' DID documents, supplied by the
	// operator (offline; see ReadDIDDocuments): the relays a recipient's
	// document names may ACK the messages to that recipient (to the
	// ack_target when the ACK names one). A DID given twice is refused.
	Documents []*amp.DIDDocument
	// TrustedRelays are relay DIDs the operator trusts for every message,
	// beside the documents.
	TrustedRelays []string
}

// NewOutbox checks cfg and returns an Outbox.
func NewOutbox(cfg OutboxConfig) (*Outbox, error) {
	if cfg.Now == nil {
		return nil, misconfigured("the outbox needs a clock")
	}
	limit.Default(&cfg.Max, 1<<16)
	o := &Outbox{max: cfg.Max, now: cfg.Now, relaysOf: map[string][]string{}, m: map[amp.ID]*Outbound{}}
	for _, r := range cfg.TrustedRelays {
		if !amp.ValidDID(r) {
			return nil, misconfigured("a trusted relay is not a did")
		}
		o.always = append(o.always, amp.BareDID(r))
	}
	if cfg.Self != nil {
		o.always = append(o.always, cfg.Self.Relays...)
	}
	for _, d := range cfg.Documents {
		if d == nil {
			return nil, misconfigured("a recipient's did document is missing")
		}
		if _, dup := o.relaysOf[d.ID]; dup {
			return nil, misconfigured("two did documents are given for the same did")
		}
		o.relaysOf[d.ID] = append([]string{}, d.Relays...)
	}
	return o, nil
}

// trustedRelays are the relays that may ACK a message to recipients to,
// for the recipient target when the ACK names one.
func (o *Outbox) trustedRelays(to amp.Recipients, target string) []string {
	out := append([]string(nil), o.always...)
	if target != "" {
		return append(out, o.relaysOf[amp.BareDID(target)]...)
	}
	for _, r := range to.DIDs {
		out = append(out, o.relaysOf[amp.BareDID(r)]...)
	}
	return out
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
		b, err := amp.DecodeAck(m.Body)
		if err != nil {
			return false
		}
		if _, err := amp.CheckAck(m, e.To, o.trustedRelays(e.To, b.AckTarget)); err != nil {
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

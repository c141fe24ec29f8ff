package client

import (
	"container/heap"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/internal/limit"
)

// OutState is where an outbound message stands (RFC 001 §16.5).
type OutState int

// Outbound message states. Delivered, Processed and Failed come from
// reports (a synchronous PROC_OK or PROC_FAIL is its sender's report too;
// a PROCESSING, synchronous or not, changes nothing); Answered from any
// other synchronous reply; Failed also from a relay's final refusal;
// Expired from the clock.
//
// A message to several recipients is final once each of them settled it:
// by its final report (PROC_OK, PROC_FAIL, ERROR), or, for the Client's
// peer when it is one of them, by its synchronous answer; a peer that is
// none of them (a relay) settles none (docs/SPEC-DECISIONS.md
// TRANSPORT-19, TRANSPORT-22, TRANSPORT-23), but that its signed ERROR
// refusing the message for good, before any ACK, ends the recipients
// still unsettled as refused (OutFailed, their shares freed; not their
// word: a report of theirs is still taken, TRANSPORT-25). Until then it
// is OutDelivered once one of them did (or an ACK came).
const (
	OutSent      OutState = iota // sent, nothing heard yet
	OutDelivered                 // an ACK that passed the §16.1 rules, or some recipients settled
	OutProcessed                 // PROC_OK from every recipient
	OutFailed                    // PROC_FAIL or ERROR reported by a recipient, or refused for good by a relay
	OutAnswered                  // a verified synchronous reply (an ERROR included), no report failed
	OutExpired                   // ts + ttl passed with no final report
)

// settlement is how one recipient of an entry settled it.
type settlement uint8

const (
	unsettled settlement = iota // nothing final from it yet
	byReport                    // its final report (PROC_OK, PROC_FAIL, ERROR)
	byAnswer                    // the peer's synchronous answer
	byRetry                     // the peer's signed ERROR asking for a retry, until the caller's retry (Add)
	byRefusal                   // a relay's final refusal: no word of the recipient's, its report is still taken; until the caller's retry (Add)
)

// Outbound is the state of one outbound message.
type Outbound struct {
	ID      amp.ID
	To      amp.Recipients
	Expires time.Time
	State   OutState
	// Report is the last report that changed the state (nil for none),
	// as a bounded summary: its envelope (id, type, ts, ttl, from,
	// reply_to, thread_id), without its body, signature, recipients or
	// extensions, so that a peer's reports hold no more than a few hundred
	// bytes an entry (docs/SPEC-DECISIONS.md REPORT-4). For a message to
	// several recipients it is the last final report (PROC_OK, PROC_FAIL,
	// ERROR) of one of them, never an ACK once one came, and the first
	// failure's once one failed: an OutFailed entry's Report names a
	// recipient that failed (TRANSPORT-19), or, when none failed and a
	// relay refused the message for good, is nil or a recipient's PROC_OK
	// (the relay's ERROR is no recipient's report: Send returned it,
	// TRANSPORT-25).
	Report *amp.Message
	// rcpts are the message's distinct recipients (bare DIDs, sorted);
	// settled[i]: how rcpts[i] settled the entry (unsettled: it still
	// counts in rcpts[i]'s share); left counts those unsettled; failed:
	// a report was not PROC_OK; acked: an ACK came; at: its index in
	// the outbox's queue.
	rcpts   []string
	settled []settlement
	left    int
	failed  bool
	acked   bool
	at      int
}

// update sets e.State from its recipients' settlements: final once all
// settled (OutFailed when a report failed or a relay's refusal settled
// one, else OutAnswered when a synchronous answer settled one, else
// OutProcessed), OutDelivered while some settled or an ACK came, else
// OutSent.
func (e *Outbound) update() {
	switch {
	case e.left > 0 && (e.acked || e.left < len(e.rcpts)):
		e.State = OutDelivered
	case e.left > 0:
		e.State = OutSent
	case e.failed || slices.Contains(e.settled, byRefusal):
		e.State = OutFailed
	case slices.Contains(e.settled, byAnswer) || slices.Contains(e.settled, byRetry):
		e.State = OutAnswered
	default:
		e.State = OutProcessed
	}
}

// summary is the bounded copy of a report that an entry keeps.
func summary(m *amp.Message) *amp.Message {
	return &amp.Message{V: m.V, ID: m.ID, Type: m.Type, TS: m.TS, TTL: m.TTL, From: m.From,
		ReplyTo: append([]byte(nil), m.ReplyTo...), ThreadID: append([]byte(nil), m.ThreadID...)}
}

// Outbox keeps a sender's outbound messages until they are confirmed
// (processed, failed or answered) or expire (RFC 001 §16.5), and matches
// the reports that arrive about them: Receive fits agent.Config.Receipts.
// An ACK must pass the §16.1 rules (amp.CheckAck: a recipient ACK from a
// recipient of the original, a relay ACK from a relay the sender's or the
// recipient's DID document lists as an AgentMessagingRelay service, or
// one the operator configured); a PROC_* or ERROR must come from a
// recipient of the original, and counts for that recipient alone: a
// message to several is processed (or failed) once each of them said so,
// and a recipient's report frees its share of the entry only. A Client's
// synchronous answer likewise settles its peer's own recipient, and none
// when the peer is none of the message's recipients (a relay or other
// intermediary, whose word is at most a relay ACK: delivered, RFC 001
// §16.1); a recipient's report outranks an answer (docs/SPEC-DECISIONS.md
// TRANSPORT-22, TRANSPORT-23). Such a peer's signed ERROR that refuses
// the message for good (no retry may change it), before any ACK, ends
// the entry OutFailed and frees the shares of the recipients still
// unsettled, as no word of theirs: their reports are still taken
// (TRANSPORT-25). A report that matches nothing, or breaks a
// rule, changes nothing. At most Max messages are kept, and at most
// MaxPerRecipient naming one recipient that has not reported; expired and
// confirmed ones make room first. A report is kept as a bounded summary
// (Outbound.Report). Safe for concurrent use.
type Outbox struct {
	mu       sync.Mutex
	max      int
	share    int            // the most entries one recipient may hold
	held     map[string]int // recipient DID -> entries naming it
	now      func() time.Time
	always   []string            // relays trusted for every message
	relaysOf map[string][]string // recipient DID -> relays its document lists
	m        map[amp.ID]*Outbound
	queue    dropOrder // the entries of m, in the order a sweep drops them
	visited  int       // entries the sweeps looked at (tests count them)
}

// dropOrder is a heap (container/heap) of the entries of an Outbox: the
// final ones first, then by expiry, so that a sweep finds what it may
// drop at its top and stops at the first entry it may not: a refused
// Add looks at one entry, not at every entry (docs/SPEC-DECISIONS.md
// REPORT-4: Max is 65,536). Outbox.update keeps it in order when an
// entry becomes final or stops being final (a retry reopens it); an
// entry's expiry never changes.
type dropOrder []*Outbound

// Len is the number of entries (container/heap).
func (q dropOrder) Len() int { return len(q) }

// Less puts a final entry before one that is not, then the one that
// expires first (container/heap).
func (q dropOrder) Less(i, j int) bool {
	if fi, fj := final(q[i].State), final(q[j].State); fi != fj {
		return fi
	}
	return q[i].Expires.Before(q[j].Expires)
}

// Swap swaps two entries and their indexes (container/heap).
func (q dropOrder) Swap(i, j int) {
	q[i], q[j] = q[j], q[i]
	q[i].at, q[j].at = i, j
}

// Push appends x, an *Outbound (container/heap).
func (q *dropOrder) Push(x any) {
	e := x.(*Outbound)
	e.at = len(*q)
	*q = append(*q, e)
}

// Pop removes the last entry (container/heap).
func (q *dropOrder) Pop() any {
	old := *q
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*q = old[:len(old)-1]
	return e
}

// update sets e.State from its settlements (Outbound.update) and keeps
// e's place in the queue when it became final or stopped being final
// (o.mu held).
func (o *Outbox) update(e *Outbound) {
	was := final(e.State)
	e.update()
	if final(e.State) != was {
		heap.Fix(&o.queue, e.at)
	}
}

// OutboxConfig configures an Outbox.
type OutboxConfig struct {
	// Max bounds the messages kept (default 65,536).
	Max int
	// MaxPerRecipient bounds the messages kept that name one recipient
	// that has not sent its final report on them (default a quarter of
	// Max, at least 1, at most Max), so that a peer that confirms nothing
	// fills only its share and messages to the others are still taken.
	MaxPerRecipient int
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
	limit.Default(&cfg.MaxPerRecipient, max(cfg.Max/4, 1))
	cfg.MaxPerRecipient = min(cfg.MaxPerRecipient, cfg.Max)
	o := &Outbox{max: cfg.Max, share: cfg.MaxPerRecipient, held: map[string]int{}, now: cfg.Now, relaysOf: map[string][]string{}, m: map[amp.ID]*Outbound{}}
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

// Names of the refusals of Add, both 5004 and retryable.
const (
	// ErrOutboxFull: Max messages await confirmation.
	ErrOutboxFull = amp.ErrName("outbox_full")
	// ErrRecipientOutboxFull: MaxPerRecipient messages to one of the
	// message's recipients await confirmation.
	ErrRecipientOutboxFull = amp.ErrName("recipient_outbox_full")
)

// recipients are the distinct bare DIDs a message names, sorted: sorted
// and compacted, not compared pairwise (a message may name 65,536).
func recipients(to amp.Recipients) []string {
	out := make([]string, 0, len(to.DIDs))
	for _, d := range to.DIDs {
		out = append(out, amp.BareDID(d))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// release takes one entry off the share of recipient r (o.mu held).
func (o *Outbox) release(r string) {
	if o.held[r]--; o.held[r] <= 0 {
		delete(o.held, r)
	}
}

// drop forgets the entry id: it leaves the shares of the recipients that
// have not settled it (o.mu held).
func (o *Outbox) drop(id amp.ID, e *Outbound) {
	for i, r := range e.rcpts {
		if e.settled[i] == unsettled {
			o.release(r)
		}
	}
	heap.Remove(&o.queue, e.at)
	delete(o.m, id)
}

// settle records that rcpts[i] of e settled it (how), freeing its share
// of the entry (o.mu held).
func (o *Outbox) settle(e *Outbound, i int, how settlement) {
	if e.settled[i] == unsettled {
		e.left--
		o.release(e.rcpts[i])
	}
	e.settled[i] = how
}

// sweep drops what is confirmed or expired (o.mu held): from the top of
// the queue, up to the first entry neither final nor expired, behind
// which none is.
func (o *Outbox) sweep() {
	now := o.now()
	for len(o.queue) > 0 {
		e := o.queue[0]
		o.visited++
		if !final(e.State) && !now.After(e.Expires) {
			return
		}
		o.drop(e.ID, e)
	}
}

// fullFor is the refusal of a message to rs, or nil (o.mu held).
func (o *Outbox) fullFor(rs []string) error {
	if len(o.m) >= o.max {
		return amp.Named(amp.CodeOverloaded, ErrOutboxFull, "%d messages await confirmation; retry later", o.max)
	}
	return o.shareFullFor(rs)
}

// shareFullFor is the refusal of one more entry naming rs, or nil (o.mu
// held).
func (o *Outbox) shareFullFor(rs []string) error {
	for _, r := range rs {
		if o.held[r] >= o.share {
			return amp.Named(amp.CodeOverloaded, ErrRecipientOutboxFull, "%d messages to one recipient await confirmation; retry later", o.share)
		}
	}
	return nil
}

// Add records a message just sent. A full outbox (after dropping what is
// confirmed or expired) is 5004 outbox_full, retryable; a recipient
// already holding MaxPerRecipient entries is 5004 recipient_outbox_full,
// for messages that name it only. A message already kept is a retry of
// the same message: it changes nothing, but that the recipients a signed
// ERROR asking for a retry settled, or a relay's final refusal, are open
// again, so that the retry's ACK, answer and reports are matched
// (docs/SPEC-DECISIONS.md TRANSPORT-8, TRANSPORT-22, TRANSPORT-25): it
// stays the one entry, and takes their shares again, refused as a new
// message would be when one is full.
func (o *Outbox) Add(m *amp.Message) error { return o.add(m, "") }

// add is Add for a message sent to peer ("": any), whose retry reopens
// (reopening) what a retryable answer or a relay's final refusal settled:
// peer's own recipient when peer is one of them, else every one so
// settled (a relay's other answers settle none, TRANSPORT-23: those were
// settled through another Client).
func (o *Outbox) add(m *amp.Message, peer string) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if e, ok := o.m[m.ID]; ok {
		again := reopening(e, peer)
		if len(again) == 0 {
			return nil
		}
		rs := make([]string, len(again))
		for j, i := range again {
			rs[j] = e.rcpts[i]
		}
		if o.shareFullFor(rs) != nil {
			o.sweep()
			if err := o.shareFullFor(rs); err != nil {
				return err
			}
		}
		if e, ok := o.m[m.ID]; ok { // not swept: reopen it
			for _, i := range again {
				e.settled[i], e.left = unsettled, e.left+1
				o.held[e.rcpts[i]]++
			}
			o.update(e)
			return nil
		}
	}
	rs := recipients(m.To)
	if o.fullFor(rs) != nil {
		o.sweep()
		if err := o.fullFor(rs); err != nil {
			return err
		}
	}
	ttl := time.Duration(m.TTL) * time.Millisecond
	e := &Outbound{ID: m.ID, To: amp.Recipients{DIDs: slices.Clone(m.To.DIDs), List: m.To.List},
		Expires: time.UnixMilli(int64(m.TS)).Add(ttl), State: OutSent, rcpts: rs, settled: make([]settlement, len(rs)), left: len(rs)}
	o.m[m.ID] = e
	heap.Push(&o.queue, e)
	for _, r := range rs {
		o.held[r]++
	}
	return nil
}

// reopening are the indexes of the recipients of e that a retry of its
// message to peer ("": any) reopens: those a retryable answer or a
// relay's final refusal settled (byRetry, byRefusal: the retry may go
// otherwise), peer's alone when peer is one of them.
func reopening(e *Outbound, peer string) []int {
	again := func(how settlement) bool { return how == byRetry || how == byRefusal }
	var out []int
	if i, found := slices.BinarySearch(e.rcpts, amp.BareDID(peer)); peer != "" && found {
		if again(e.settled[i]) {
			out = append(out, i)
		}
		return out
	}
	for i, how := range e.settled {
		if again(how) {
			out = append(out, i)
		}
	}
	return out
}

// State returns the state of the outbound message id: a copy, its
// recipients and report too, so that what the caller does with it
// changes nothing kept.
func (o *Outbox) State(id amp.ID) (Outbound, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	e, ok := o.m[id]
	if !ok {
		return Outbound{}, false
	}
	out := Outbound{ID: e.ID, To: amp.Recipients{DIDs: slices.Clone(e.To.DIDs), List: e.To.List}, Expires: e.Expires, State: e.State}
	if e.Report != nil {
		out.Report = summary(e.Report)
	}
	if !final(out.State) && o.now().After(out.Expires) {
		out.State = OutExpired
	}
	return out, true
}

// Delivered records a verified synchronous ACK to id: delivered, not yet
// final, so that the PROC_OK or PROC_FAIL that follows is still matched
// (RFC 001 §16.5).
func (o *Outbox) Delivered(id amp.ID) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if e, ok := o.m[id]; ok && !final(e.State) {
		e.acked = true
		o.update(e)
	}
}

// Answered records a verified synchronous reply to id from whoever the
// message went to, as the embedder vouches: it settles every recipient
// that has not reported (OutAnswered unless a report failed). Client
// records its peer's answer for the peer's own recipient only, and an
// intermediary's (a peer that is none of the recipients) for none, but
// that its final refusal ends the recipients still waiting as refused
// (docs/SPEC-DECISIONS.md TRANSPORT-22, TRANSPORT-23, TRANSPORT-25).
func (o *Outbox) Answered(id amp.ID) { o.answered(id, "", plainAnswer) }

// answer is what a verified synchronous reply says of its message, as
// the Client that verified it classes it (Client.record).
type answer uint8

const (
	plainAnswer  answer = iota // any reply but an ACK or the two below
	retryAnswer                // a signed ERROR that asks for a retry
	finalRefusal               // a signed ERROR no retry of the same message may change (refusedForGood)
)

// answered records a verified synchronous reply a to id from peer ("":
// anyone, Answered). It settles peer's own recipient when peer is one of
// the message's (a recipient of several answers for itself alone), and
// none when peer is none of them: a relay or any other intermediary
// (RFC 001 §1.6) may say that it accepted the message for delivery, an
// ACK (Delivered, after the §16.1 relay rules), never that a recipient
// got, processed or answered it (PROC_OK and PROC_FAIL are the
// recipient's only, §16.1), so its answer leaves the entry to the
// recipients' reports or its ttl (§16.5). It never settles a recipient
// that reported (its report is its last word, and outranks an answer).
// A retryAnswer is settled until the caller's retry of the message (Add)
// reopens it.
//
// An intermediary's finalRefusal is the one exception (TRANSPORT-25): the
// message will not go by the path the sender chose, so waiting its ttl
// in the recipients' shares serves nothing. It settles the recipients
// still unsettled as refused (byRefusal: OutFailed, their shares freed),
// no word of theirs (their reports are still taken, and the caller's
// retry reopens them), and only while no ACK came: once an ACK said the
// message was accepted for delivery, a refusal (of a retry of it) no
// longer says it will not be delivered.
func (o *Outbox) answered(id amp.ID, peer string, a answer) {
	o.mu.Lock()
	defer o.mu.Unlock()
	e, ok := o.m[id]
	if !ok {
		return
	}
	how := byAnswer
	if a == retryAnswer {
		how = byRetry
	}
	i, found := slices.BinarySearch(e.rcpts, amp.BareDID(peer))
	switch {
	case peer == "":
		for i, was := range e.settled {
			if was != byReport {
				o.settle(e, i, how)
			}
		}
	case !found && (a != finalRefusal || e.acked): // an intermediary: settles no recipient
		return
	case !found:
		for i, was := range e.settled {
			if was == unsettled {
				o.settle(e, i, byRefusal)
			}
		}
	case e.settled[i] != byReport:
		o.settle(e, i, how)
	}
	o.update(e)
}

// reportedAnswer records the verified synchronous reply m to id, a
// PROC_OK or PROC_FAIL, as the report of its sender (the Client's peer):
// for the peer's own recipient only, and for none when the peer is none
// of the message's recipients (a relay's PROC_* is no recipient's word,
// RFC 001 §16.1), as reported takes a report that arrives on its own
// (docs/SPEC-DECISIONS.md AMP-19).
func (o *Outbox) reportedAnswer(id amp.ID, m *amp.Message) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if e, ok := o.m[id]; ok {
		o.reported(e, m)
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
	if !ok {
		return false
	}
	switch m.Type {
	case amp.TypeAck:
		if final(e.State) {
			return false
		}
		b, err := amp.DecodeAck(m.Body)
		if err != nil {
			return false
		}
		if _, err := amp.CheckAck(m, e.To, o.trustedRelays(e.To, b.AckTarget)); err != nil {
			return false
		}
		e.acked = true
		o.update(e)
		if e.left == len(e.rcpts) { // a final report outranks an ACK
			e.Report = summary(m)
		}
		return true
	case amp.TypeProcOK, amp.TypeProcFail, amp.TypeError:
		return o.reported(e, m)
	}
	return false // PROCESSING changes nothing here
}

// reported records the final report m (PROC_OK, PROC_FAIL, ERROR) of one
// recipient of e: only a recipient that has not reported yet counts, and
// for itself alone (docs/SPEC-DECISIONS.md TRANSPORT-19), and not one a
// synchronous answer settled, but for an answer that asked for a retry
// or a relay's final refusal: the report is the recipient's last word
// and outranks them, so that the caller's retry (Add) reopens nothing it
// reported on (TRANSPORT-22, TRANSPORT-25). Its share of the entry is
// freed at once (a refused one's already was); the entry is final
// (OutProcessed, or OutFailed when any recipient's report was not
// PROC_OK or one is left refused) once every recipient settled, and
// OutDelivered until then. It becomes the entry's Report unless a
// recipient failed before, so that a failed entry's Report is its first
// failure's (o.mu held).
func (o *Outbox) reported(e *Outbound, m *amp.Message) bool {
	i, found := slices.BinarySearch(e.rcpts, amp.BareDID(m.From))
	if !found || (e.settled[i] != unsettled && e.settled[i] != byRetry && e.settled[i] != byRefusal) {
		return false
	}
	o.settle(e, i, byReport)
	if !e.failed { // the first failure's report is never replaced
		e.Report = summary(m)
	}
	e.failed = e.failed || m.Type != amp.TypeProcOK
	o.update(e)
	return true
}

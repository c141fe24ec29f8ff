package client

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/capability"
	"github.com/ampbundle/ampbundle/internal/limit"
)

func misconfigured(format string, args ...any) error {
	return amp.Named(0, "misconfigured", format, args...)
}

// Transport carries one message to the peer and returns its reply: a nil
// reply with a nil error means the peer took the message without a reply
// (a report). The HTTP binding (amphttp.Transport) and the AMPS/TCP
// binding (ampstcp.Transport) are transports; Loopback is one into
// an agent in the same process. An error is a failure to deliver or to get
// an answer; a reply that is an AMP ERROR is not an error here.
type Transport interface {
	RoundTrip(ctx context.Context, msg []byte) ([]byte, error)
}

// TransportFunc adapts a function to Transport.
type TransportFunc func(ctx context.Context, msg []byte) ([]byte, error)

// RoundTrip calls f.
func (f TransportFunc) RoundTrip(ctx context.Context, msg []byte) ([]byte, error) { return f(ctx, msg) }

// Retry is the sender's retry policy (RFC 001 §16.3): a delivery failure, or
// an ERROR reply marked retryable (5xxx), is retried with the SAME message
// (same id, same signature), after min(Base * 2^attempt, Max) scaled by a
// random factor in [0.5, 1) (jitter), at most MaxAttempts times in all. A
// CAP_RESULT is final for its message id and is never retried: the
// provider's idempotency ledger would only repeat it.
type Retry struct {
	MaxAttempts int           // default 5
	Base        time.Duration // default 1 s
	Max         time.Duration // default 60 s
	// Sleep waits d or until ctx ends; tests replace it. Default: a timer.
	Sleep func(ctx context.Context, d time.Duration) error
}

// Config configures a Client.
type Config struct {
	// Identity signs the requests.
	Identity amp.Identity
	// Peer is the provider's DID; its replies must come from it.
	Peer string
	// Transport carries the messages. Required.
	Transport Transport
	// DIDs resolves the peer's DID when it is not a did:key.
	DIDs amp.DIDResolver
	// Now and Rand are the clock and CSPRNG. Required.
	Now  func() time.Time
	Rand io.Reader
	// TTL of requests (default 24 h).
	TTL time.Duration
	// Encrypt sends every request with authcrypt.
	Encrypt bool
	// Retry is the retry policy.
	Retry Retry
	// Logger; nil discards.
	Logger *slog.Logger
	// Limits caps replies.
	Limits amp.Limits
	// QueryLimits bound what QueryAll reads of a provider's pages.
	QueryLimits QueryLimits
	// Outbox, when set, keeps every request sent until it is answered,
	// confirmed by a report (give Outbox.Receive to the receiving agent's
	// agent.Config.Receipts) or expired, and exposes its state.
	Outbox *Outbox
}

// Client sends AMP requests to one provider and checks its replies.
type Client struct {
	cfg  Config
	send *amp.Sender
	recv *amp.Receiver
	log  *slog.Logger
}

// New checks cfg and returns a Client.
func New(cfg Config) (*Client, error) {
	switch {
	case cfg.Transport == nil:
		return nil, misconfigured("the client needs a transport")
	case !amp.ValidDID(cfg.Peer):
		return nil, misconfigured("the client needs the provider's did")
	case cfg.Now == nil || cfg.Rand == nil:
		return nil, misconfigured("the client needs a clock and randomness")
	}
	limit.Default(&cfg.Retry.MaxAttempts, 5)
	limit.Default(&cfg.Retry.Base, time.Second)
	limit.Default(&cfg.Retry.Max, 60*time.Second)
	if cfg.Retry.Sleep == nil {
		cfg.Retry.Sleep = func(ctx context.Context, d time.Duration) error {
			t := time.NewTimer(d)
			defer t.Stop()
			select {
			case <-t.C:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	if cfg.TTL == 0 {
		cfg.TTL = amp.DefaultTTL
	}
	cfg.QueryLimits = cfg.QueryLimits.withDefaults()
	c := &Client{cfg: cfg, log: cfg.Logger}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	shared := amp.NewSharedKeys(0)
	var err error
	if c.send, err = amp.NewSender(amp.SenderConfig{Identity: cfg.Identity, Rand: cfg.Rand, Now: cfg.Now, DIDs: cfg.DIDs, SharedKeys: shared}); err != nil {
		return nil, err
	}
	var agree []*amp.AgreementKey
	if cfg.Identity.Agreement != nil {
		agree = []*amp.AgreementKey{cfg.Identity.Agreement}
	}
	replyDIDs := peerOnly{dids: cfg.DIDs, peer: amp.BareDID(cfg.Peer)}
	if c.recv, err = amp.NewReceiver(amp.ReceiverConfig{Now: cfg.Now, DIDs: replyDIDs, AgreementKeys: agree, SharedKeys: shared, Limits: cfg.Limits}); err != nil {
		return nil, err
	}
	return c, nil
}

// Exchange is one request and its verified reply.
type Exchange struct {
	Request  *amp.Message
	Reply    *amp.Message
	Attempts int
}

// Do sends one request of type typ with body and returns the verified reply.
// An ERROR reply is returned as its *amp.Error (after the retries it
// allows), together with the exchange.
func (c *Client) Do(ctx context.Context, typ amp.Type, body []byte) (*Exchange, error) {
	req, msg, err := c.send.Seal(ctx, amp.Draft{Type: typ, To: amp.To(c.cfg.Peer), TTL: c.cfg.TTL, Body: body, Encrypt: c.cfg.Encrypt})
	if err != nil {
		return nil, err
	}
	return c.Send(ctx, req, msg)
}

// Send delivers an already sealed request (msg, the encoding of req) and
// verifies the reply, retrying as Retry says (resend).
func (c *Client) Send(ctx context.Context, req *amp.Message, msg []byte) (*Exchange, error) {
	ex := &Exchange{Request: req}
	if c.cfg.Outbox != nil {
		if err := c.cfg.Outbox.add(req, c.cfg.Peer); err != nil {
			return ex, err
		}
	}
	// unrecorded: the latest attempt got a verified ERROR that asks for a
	// retry, not yet recorded in the Outbox: the message is answered only
	// once no retry follows (the exchange ends with that ERROR).
	unrecorded := false
	err := c.resend(ctx, req, func() (bool, bool, error) {
		unrecorded = false
		ex.Attempts++
		raw, err := c.cfg.Transport.RoundTrip(ctx, msg)
		if err != nil {
			return redeliverable(err), false, err
		}
		reply, err := c.verify(ctx, raw, req)
		if err != nil {
			return false, false, err
		}
		ex.Reply = reply
		again, err := replyError(reply)
		if again {
			unrecorded = true
		} else {
			c.record(req.ID, reply, false)
		}
		return again, true, err
	})
	if unrecorded {
		c.record(req.ID, ex.Reply, true)
	}
	return ex, err
}

// record notes a verified reply to the request id in the Outbox, if any.
// A synchronous ACK says delivered, not answered: the final report
// (PROC_OK, PROC_FAIL) may follow (RFC 001 §16.5). Any other reply is the
// peer's answer, for the peer's own recipient when the message names it
// among others (docs/SPEC-DECISIONS.md TRANSPORT-22), and for no
// recipient when the message does not name the peer: a relay's (or any
// intermediary's) word is at most that it accepted the message, RFC 001
// §16.1 (TRANSPORT-23); but that its signed ERROR refusing the message
// for good (refusedForGood) ends the recipients still waiting as refused,
// freeing their shares (TRANSPORT-25). Only a reply verify passed comes
// here: signed by the peer's key, from the peer, to the caller, reply_to
// the request's id. retryable: the reply is a signed ERROR that asks for
// a retry, the answer only until the caller sends the message again
// (Send reopens it). A PROCESSING (RFC 001 §5: a long operation in
// progress, provisional) changes nothing, and a PROC_OK or PROC_FAIL is
// the peer's report, for its own recipient, as each would be arriving on
// its own (Outbox.Receive): taken as the answer, either closed the entry
// and the final report that followed was ignored, or a PROC_FAIL left it
// answered, not failed (docs/SPEC-DECISIONS.md AMP-19).
func (c *Client) record(id amp.ID, reply *amp.Message, retryable bool) {
	switch {
	case c.cfg.Outbox == nil, reply.Type == amp.TypeProcessing:
	case reply.Type == amp.TypeProcOK || reply.Type == amp.TypeProcFail:
		c.cfg.Outbox.reportedAnswer(id, reply)
	case reply.Type == amp.TypeAck:
		c.cfg.Outbox.Delivered(id)
	case retryable:
		c.cfg.Outbox.answered(id, c.cfg.Peer, retryAnswer)
	case refusedForGood(reply):
		c.cfg.Outbox.answered(id, c.cfg.Peer, finalRefusal)
	default:
		c.cfg.Outbox.answered(id, c.cfg.Peer, plainAnswer)
	}
}

// resend is the one retry loop of Send and Post (RFC 001 §16.3,
// docs/SPEC-DECISIONS.md TRANSPORT-8): it calls try, one attempt with
// the same message req, at most Retry.MaxAttempts times, while try fails
// and says a retry may change the answer (try's again: redeliverable for
// a delivery failure, the retry flag of a signed ERROR, replyError),
// waiting c.wait before each retry (the backoff, or the agent's
// Retry-After when longer, at most Retry.Max). try's signed says that err
// is a verified reply's (a signed ERROR), whose message is the agent's
// own text: the log of a retry names only its code and error name
// (retryCause). It returns try's last error, or a timeout when ctx ends
// during a wait, which wraps that error too (errors.Is and errors.As
// reach the ERROR the exchange ended on).
func (c *Client) resend(ctx context.Context, req *amp.Message, try func() (again, signed bool, err error)) error {
	for attempt := 0; ; attempt++ {
		again, signed, err := try()
		if err == nil || !again || attempt+1 >= c.cfg.Retry.MaxAttempts {
			return err
		}
		c.log.Warn("retrying with the same message", append([]any{"id", req.ID.String(), "type", req.Type.Name(), "attempt", attempt + 1}, retryCause(err, signed)...)...)
		if serr := c.cfg.Retry.Sleep(ctx, c.wait(attempt, err)); serr != nil {
			return amp.Wrap(amp.CodeTimeout, errors.Join(serr, err), "gave up retrying: the wait ended after attempt %d got %d %s", attempt+1, uint16(amp.CodeOf(err)), amp.NameOf(err))
		}
	}
}

// retryCause is what the log of a retry says of the failure err: its
// code and error name; for a failure to deliver (not signed: the
// transport's own error, whose peer text the bindings bound and quote,
// transport.UnsignedRefusal) the error as well. A signed ERROR's message
// is the agent's text, any length and any bytes: it is never logged
// (docs/SPEC-DECISIONS.md TRANSPORT-8).
func retryCause(err error, signed bool) []any {
	out := []any{"code", uint16(amp.CodeOf(err)), "name", string(amp.NameOf(err))}
	if !signed {
		out = append(out, "err", err)
	}
	return out
}

// redeliverable reports whether a failure to deliver (a transport's
// error) may go otherwise with the same message: its code is retryable
// (RFC 001 §15.3) and it is not Final (a redirect, a refusal the same
// message to the same place always gets: TRANSPORT-8).
func redeliverable(err error) bool {
	e := amp.AsError(err)
	return e != nil && !e.Final && e.Code.Retryable()
}

// replyError is the error a verified reply stands for: nil for any type
// but ERROR; for an ERROR, its body as an error and whether it asks for
// a retry (retry: true).
func replyError(reply *amp.Message) (again bool, err error) {
	if reply.Type != amp.TypeError {
		return false, nil
	}
	eb, err := amp.DecodeError(reply.Body)
	if err != nil {
		return false, err
	}
	return eb.Retry != nil && *eb.Retry, eb.AsError()
}

// refusedForGood reports whether the verified reply is an ERROR that no
// retry of the same message may change: its body decodes, it does not
// ask for a retry, and its code is not retryable (amp.Code.Retryable,
// the Retry column of RFC 001 §15.3: 2001 recipient_not_found, 2002,
// 2003, 3005 and every 5xxx are not final, whatever the flag says).
// Either word for a retry keeps the message waiting
// (docs/SPEC-DECISIONS.md TRANSPORT-25).
func refusedForGood(reply *amp.Message) bool {
	if reply.Type != amp.TypeError {
		return false
	}
	eb, err := amp.DecodeError(reply.Body)
	return err == nil && (eb.Retry == nil || !*eb.Retry) && !eb.Code.Retryable()
}

// retryAfterer is the cause a transport gives a busy refusal that named a
// wait (amphttp: the Retry-After header).
type retryAfterer interface{ RetryAfter() time.Duration }

// wait is the wait before retry number n+1 after the failure err: the
// backoff, or the wait the agent asked for when it is longer, at most
// Retry.Max (docs/SPEC-DECISIONS.md TRANSPORT-8).
func (c *Client) wait(n int, err error) time.Duration {
	d := c.backoff(n)
	var ra retryAfterer
	if errors.As(err, &ra) {
		d = max(d, min(ra.RetryAfter(), c.cfg.Retry.Max))
	}
	return d
}

// backoff is the wait before retry number n+1.
func (c *Client) backoff(n int) time.Duration {
	d := c.cfg.Retry.Base << n
	if d <= 0 || d > c.cfg.Retry.Max {
		d = c.cfg.Retry.Max
	}
	var b [8]byte
	io.ReadFull(c.cfg.Rand, b[:])
	frac := float64(binary.BigEndian.Uint64(b[:])>>11) / (1 << 53) // [0, 1)
	return time.Duration(float64(d) * (0.5 + frac/2))
}

// verify checks a reply: a valid AMP message (signature against the
// provider's key), from the provider, to us, correlated with the request.
// A reply_to that does not match is 4001 (RFC 004 §9, A.12, A.13).
func (c *Client) verify(ctx context.Context, raw []byte, req *amp.Message) (*amp.Message, error) {
	reply, err := c.recv.Receive(ctx, raw)
	var np notPeer
	if errors.As(err, &np) {
		// The sender's DID passed amp.ValidDID (bounded, no control
		// characters) before it reached the resolver; %q quotes it all
		// the same. Its signature was never checked: no WrongSender.
		return nil, amp.Named(amp.CodeBadRequest, ErrWrongSender, "the reply names %q as its sender, not the provider %q; its document was not looked up", np.did, amp.BareDID(c.cfg.Peer))
	}
	if err != nil {
		return nil, err
	}
	if req.Encrypted() && !reply.Encrypted() {
		// No downgrade: a request sent with authcrypt is answered with it,
		// or the reply crossed the path in clear (docs/CLI.md §3.6).
		return nil, amp.Named(amp.CodeBadRequest, ErrPlaintextReply, "the reply to an encrypted request is not encrypted")
	}
	if amp.BareDID(reply.From) != amp.BareDID(c.cfg.Peer) {
		// The sender's DID passed the message checks (amp.ValidDID: bounded,
		// no control characters); %q quotes it all the same.
		return nil, amp.Named(amp.CodeBadRequest, ErrWrongSender, "the reply is from %q, not from the provider %q", amp.BareDID(reply.From), amp.BareDID(c.cfg.Peer)).
			WithDetails(WrongSender{From: amp.BareDID(reply.From), Provider: amp.BareDID(c.cfg.Peer)})
	}
	if !reply.To.Contains(c.cfg.Identity.DID) {
		return nil, amp.Named(amp.CodeBadRequest, "wrong_recipient", "the reply is not addressed to this client")
	}
	if !bytes.Equal(reply.ReplyTo, req.ID[:]) {
		return nil, amp.Named(amp.CodeBadRequest, "reply_mismatch", "the reply's reply_to is not the request's id")
	}
	if reply.Type == amp.TypeAck {
		// An ACK that answers a request must have the shape and pass the
		// rules of RFC 001 §16.1 (ack_source present and one of its two
		// values; a recipient ACK from a recipient, a relay ACK from a
		// trusted relay) before anyone takes it as delivery, as an ACK
		// arriving on its own must (Outbox.Receive).
		b, err := amp.DecodeAck(reply.Body)
		if err != nil {
			return nil, err
		}
		var relays []string
		if c.cfg.Outbox != nil {
			relays = c.cfg.Outbox.trustedRelays(req.To, b.AckTarget)
		}
		if _, err := amp.CheckAck(reply, req.To, relays); err != nil {
			return nil, err
		}
	}
	return reply, nil
}

// peerOnly is the DIDResolver of the client's Receiver: it hands dids
// (nil: none, did:key only) the provider's DID (peer, bare) alone. A
// reply is verified against its sender's keys before the client can check
// that the sender is the provider, so without it a reply naming any DID
// (a did:web of any host) made the client look that DID up, and a network
// resolver dial it (docs/SPEC-DECISIONS.md TRANSPORT-17). A did:key never
// reaches a resolver: it carries its keys.
type peerOnly struct {
	dids amp.DIDResolver
	peer string
}

// ResolveDID resolves did through r.dids when it is the provider's, and
// refuses it with a notPeer otherwise.
func (r peerOnly) ResolveDID(ctx context.Context, did string) (*amp.DIDDocument, error) {
	if amp.BareDID(did) != r.peer {
		return nil, notPeer{did: amp.BareDID(did)}
	}
	if r.dids == nil {
		return nil, errNoResolver
	}
	return r.dids.ResolveDID(ctx, did)
}

// errNoResolver is peerOnly's refusal of the provider's DID when the
// client has no Config.DIDs (amp.ResolveDID makes it 3001 unknown_did).
var errNoResolver = errors.New("the client has no resolver for the provider's did")

// notPeer is peerOnly's refusal of a DID other than the provider's.
type notPeer struct{ did string }

func (e notPeer) Error() string {
	return "the sender is not the provider: its document is not looked up"
}

// ErrPlaintextReply (4001): a reply in clear to a request sent encrypted
// (Config.Encrypt): refused before its body is used.
const ErrPlaintextReply = amp.ErrName("plaintext_reply")

// ErrWrongSender (4001): a reply from another sender than the provider
// the client was made for. Its details are a WrongSender when its
// signature verified (a did:key sender, whose keys are in its DID); a
// sender of another method is refused before its document is looked up,
// without details (docs/SPEC-DECISIONS.md TRANSPORT-17).
const ErrWrongSender = amp.ErrName("wrong_sender")

// WrongSender is the Details of an ErrWrongSender error: the DID whose
// signature the reply carries (verified against that DID's keys, and
// amp.ValidDID: bounded, no control characters), and the provider's.
type WrongSender struct {
	From     string `json:"from"`
	Provider string `json:"provider"`
}

// expect checks the reply type.
func expect(ex *Exchange, t amp.Type) error {
	if ex.Reply.Type != t {
		return amp.Named(amp.CodeBadRequest, "unexpected_reply", "expected %s, got %s", t.Name(), ex.Reply.Type.Name())
	}
	return nil
}

// Ping sends a PING and waits for the PONG.
func (c *Client) Ping(ctx context.Context) error {
	ex, err := c.Do(ctx, amp.TypePing, nil)
	if err != nil {
		return err
	}
	return expect(ex, amp.TypePong)
}

// Query sends one CAP_QUERY and returns the CAP_DECLARE, every
// descriptor of which answers the query (inFilter).
func (c *Client) Query(ctx context.Context, q capability.Query) (*capability.Declare, *Exchange, error) {
	return c.query(ctx, q, "")
}

// query is Query for a page after others that named the capability name
// (empty for the first page, or with Filter.Capability).
func (c *Client) query(ctx context.Context, q capability.Query, name string) (*capability.Declare, *Exchange, error) {
	body, err := q.Encode()
	if err != nil {
		return nil, nil, err
	}
	ex, err := c.Do(ctx, amp.TypeCapQuery, body)
	if err != nil {
		return nil, ex, err
	}
	if err := expect(ex, amp.TypeCapDeclare); err != nil {
		return nil, ex, err
	}
	d, err := capability.DecodeDeclare(ex.Reply.Body)
	if err != nil {
		return nil, ex, err
	}
	for _, desc := range d.Capabilities {
		if err := inFilter(q.Filter, name, desc); err != nil {
			return nil, ex, err
		}
		name = desc.Name
	}
	return &d, ex, nil
}

// ErrOutsideFilter (4001): a CAP_DECLARE names a descriptor the query's
// filter does not ask for (RFC 004 §6.1-6.2: a query is answered with the
// descriptors that match it). The answer is refused whole.
const ErrOutsideFilter = amp.ErrName("outside_filter")

// ErrDuplicateDescriptor (4001): QueryAll got the same name:version twice
// (RFC 004 §6.5: pages do not repeat records).
const ErrDuplicateDescriptor = amp.ErrName("duplicate_descriptor")

// inFilter checks one declared descriptor against the query's filter and
// name, the capability name the answer named before it ("" for its first
// descriptor): the capability's name when the filter names it; with a
// legacy type only, which the provider's alias table resolves to one
// capability (a table the client does not hold), the name every
// descriptor of the answer, all pages together, shares; and the version
// range, which a descriptor meets by its version or, as the agent answers
// (agent/compat.go servesInRange), by a compatibility claim in the range
// that its policy serves.
func inFilter(f capability.Filter, name string, d capability.Descriptor) error {
	if f.Capability != "" && d.Name != f.Capability {
		return amp.Named(amp.CodeBadRequest, ErrOutsideFilter, "the provider declared a capability the query did not ask for")
	}
	if name != "" && d.Name != name {
		return amp.Named(amp.CodeBadRequest, ErrOutsideFilter, "the provider declared more than one capability for one query")
	}
	if f.Version.IsZero() || d.ServesInRange(f.Version) {
		return nil
	}
	return amp.Named(amp.CodeBadRequest, ErrOutsideFilter, "the provider declared a version outside the query's range")
}

// Defaults of QueryLimits.
const (
	// DefaultMaxQueryPages is the most pages QueryAll reads.
	DefaultMaxQueryPages = 10_000
	// DefaultMaxQueryDescriptors is the most descriptors QueryAll keeps,
	// all pages together.
	DefaultMaxQueryDescriptors = 50_000
	// DefaultMaxQueryBytes is the most bytes of CAP_DECLARE bodies QueryAll
	// reads, all pages together (32 MiB).
	DefaultMaxQueryBytes = 32 << 20
)

// Names of the errors by which QueryAll refuses a provider's pages, all
// 4001: the provider's answer, not the caller, is at fault.
const (
	// ErrTooManyPages: the provider named a next page after MaxPages pages.
	ErrTooManyPages = amp.ErrName("too_many_pages")
	// ErrCursorLoop: the provider named as next a cursor it had already
	// named (or the one the query started from).
	ErrCursorLoop = amp.ErrName("cursor_loop")
	// ErrQueryTooLarge: the pages hold more than MaxDescriptors
	// descriptors or MaxBytes bytes in all.
	ErrQueryTooLarge = amp.ErrName("query_too_large")
)

// QueryLimits bound what QueryAll reads and keeps of a provider's pages,
// which a hostile provider could otherwise make as many and as large as it
// likes. A field of zero or less takes its default.
type QueryLimits struct {
	// MaxPages is the most pages read (DefaultMaxQueryPages).
	MaxPages int
	// MaxDescriptors is the most descriptors kept, all pages together
	// (DefaultMaxQueryDescriptors).
	MaxDescriptors int
	// MaxBytes is the most bytes of CAP_DECLARE bodies (the descriptors
	// and cursors as the provider encoded them) read, all pages together
	// (DefaultMaxQueryBytes).
	MaxBytes int64
}

func (l QueryLimits) withDefaults() QueryLimits {
	limit.Default(&l.MaxPages, DefaultMaxQueryPages)
	limit.Default(&l.MaxDescriptors, DefaultMaxQueryDescriptors)
	limit.Default(&l.MaxBytes, DefaultMaxQueryBytes)
	return l
}

// QueryAll follows the cursors of a query to its last page and returns
// every descriptor, in the provider's order. It returns every descriptor
// or an error, never a part: past Config.QueryLimits it fails with
// ErrTooManyPages or ErrQueryTooLarge, and a cursor the provider names a
// second time (or the query's own Cursor) is ErrCursorLoop.
func (c *Client) QueryAll(ctx context.Context, q capability.Query) ([]capability.Descriptor, error) {
	out, _, err := c.QueryAllPages(ctx, q)
	return out, err
}

// QueryAllPages is QueryAll that also returns the number of pages read
// (0 with an error).
func (c *Client) QueryAllPages(ctx context.Context, q capability.Query) ([]capability.Descriptor, int, error) {
	lim := c.cfg.QueryLimits
	var (
		out  []capability.Descriptor
		read int64
		// Every cursor seen: at most MaxPages of them, and their bytes
		// count in MaxBytes (each came in a body).
		seen = map[string]struct{}{}
		// Every name:version returned (at most MaxDescriptors), build
		// metadata left out: versions that differ only there are one
		// version (SemVer precedence).
		ids = map[string]struct{}{}
	)
	if q.Cursor != "" {
		seen[q.Cursor] = struct{}{}
	}
	for pages := 1; ; pages++ {
		name := ""
		if len(out) > 0 {
			name = out[0].Name
		}
		d, ex, err := c.query(ctx, q, name)
		if err != nil {
			return nil, 0, err
		}
		read += int64(len(ex.Reply.Body))
		if read > lim.MaxBytes {
			return nil, 0, amp.Named(amp.CodeBadRequest, ErrQueryTooLarge, "the provider's pages hold more than %d bytes in all", lim.MaxBytes)
		}
		if len(d.Capabilities) > lim.MaxDescriptors-len(out) {
			return nil, 0, amp.Named(amp.CodeBadRequest, ErrQueryTooLarge, "the provider's pages hold more than %d descriptors in all", lim.MaxDescriptors)
		}
		for _, desc := range d.Capabilities {
			core, _, _ := strings.Cut(desc.Version.String(), "+")
			id := desc.Name + "@" + core
			if _, dup := ids[id]; dup {
				return nil, 0, amp.Named(amp.CodeBadRequest, ErrDuplicateDescriptor, "the provider returned the same name:version twice")
			}
			ids[id] = struct{}{}
			out = append(out, desc)
		}
		if d.NextCursor == "" {
			return out, pages, nil
		}
		if _, dup := seen[d.NextCursor]; dup {
			return nil, 0, amp.Named(amp.CodeBadRequest, ErrCursorLoop, "the provider returned a cursor it had returned before")
		}
		if pages >= lim.MaxPages {
			return nil, 0, amp.Named(amp.CodeBadRequest, ErrTooManyPages, "the provider returned more than %d pages", lim.MaxPages)
		}
		seen[d.NextCursor] = struct{}{}
		q.Cursor = d.NextCursor
	}
}

// Invoke sends a CAP_INVOKE and returns the CAP_RESULT. A result with
// status "error" is returned together with its error, named by the
// provider's name only when that passes amp.ValidErrName, else by its
// code's (the Result keeps the provider's name as it came).
func (c *Client) Invoke(ctx context.Context, inv capability.Invoke) (*capability.Result, *Exchange, error) {
	body, err := inv.Encode()
	if err != nil {
		return nil, nil, err
	}
	ex, err := c.Do(ctx, amp.TypeCapInvoke, body)
	if err != nil {
		return nil, ex, err
	}
	if err := expect(ex, amp.TypeCapResult); err != nil {
		return nil, ex, err
	}
	r, err := capability.DecodeResult(ex.Reply.Body)
	if err != nil {
		return nil, ex, err
	}
	if r.Status == capability.StatusError && r.Error != nil {
		return &r, ex, providerError(*r.Error)
	}
	return &r, ex, nil
}

// providerError is the error a CAP_RESULT with status "error" stands for:
// the provider's code, message and details, and its error name only when
// it passes amp.ValidErrName (1 to 64 bytes of a-z, 0-9 and _). Any other
// name is the provider's text, any length and any bytes, which the error's
// Error() would print first: the error takes its code's name instead, and
// the provider's stays in the Result's Error.Name, for a caller who reads
// it knowing whose it is (docs/SPEC-DECISIONS.md TRANSPORT-18). The rule
// is capability.ResultError.AsError's (amp.SafeName, TRANSPORT-24), the
// one an agent that hands the error on and the MCP bridge apply too.
func providerError(re capability.ResultError) *amp.Error {
	return re.AsError()
}

package agent

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/ampbundle/ampbundle/admission"
	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/capability"
	"github.com/ampbundle/ampbundle/internal/limit"
)

// Params of a CAP_INVOKE carried by a stream (docs/SPEC-DECISIONS.md
// STREAM-6). A verified stream whose content_type is
// capability.ParamsContentType is not handed to Config.Streams: the agent
// keeps its content (in memory up to StreamLimits.SpoolThreshold, in a
// file of StreamLimits.SpoolDir beyond) until a CAP_INVOKE from the same
// sender names it (stream_id and SHA-256) in params_stream, or until Keep
// passes. That CAP_INVOKE then goes through the whole pipeline with the
// stream's content as its params: the same decoding budget, the same
// input-schema validation as inline params. The content is used once: by
// the run, or by a final refusal; a retryable refusal before the run (no
// room in the ledger) leaves it waiting for the retry.

// ParamStreamLimits enable and bound params carried by streams. Zero
// fields take the defaults.
type ParamStreamLimits struct {
	// MaxSize caps one params stream (default 64 MiB); a larger
	// STREAM_START is refused for good (1001 limit_exceeded).
	MaxSize uint64
	// PerSender caps the verified params one sender may have waiting for
	// their CAP_INVOKE (default 4; senders are counted like open streams:
	// by principal, and the callers the policy does not name by peer, see
	// StreamLimits.PerSender), MaxKept those of all senders (default 64;
	// the callers the policy does not name hold at most three quarters),
	// MaxBytes their bytes in all (default 256 MiB). When one is reached,
	// params of a caller the policy does not name that waited longer than
	// StreamLimits.StallGrace are dropped to make room (a CAP_INVOKE
	// follows its ACK at once); beyond them the STREAM_END is refused
	// retryably (5004 params_budget_exceeded) and the stream stays open
	// until it is retried or idle.
	PerSender, MaxKept int
	MaxBytes           uint64
	// NamedReserve is the part of MaxBytes that only the params of callers
	// the policy names (Principals) may use: those of the other callers,
	// all together, hold at most MaxBytes - NamedReserve (default
	// MaxBytes/4), refused the same way beyond it.
	NamedReserve uint64
	// Keep is how long verified params wait for their CAP_INVOKE (default
	// 10 min, on the agent's clock); then they are dropped.
	Keep time.Duration
}

func (l *ParamStreamLimits) setDefaults() {
	limit.Default(&l.MaxSize, 64<<20)
	limit.Default(&l.PerSender, 4)
	limit.Default(&l.MaxKept, 64)
	limit.Default(&l.MaxBytes, 256<<20)
	limit.Default(&l.NamedReserve, l.MaxBytes/4)
	l.NamedReserve = min(l.NamedReserve, l.MaxBytes)
	limit.Default(&l.Keep, 10*time.Minute)
}

// keptParams is the verified content of one params stream.
type keptParams struct {
	key     streamKey
	bucket  string // the sender's principal, charged for it
	slot    string // whose count it is in (slotOf)
	shared  bool   // of a caller the policy does not name
	sum     []byte
	size    uint64
	mem     []byte // content when small
	file    string // spool file otherwise (its name in the spool directory)
	kept    time.Time
	expires time.Time
	// ready: filled (fill); claimed: a CAP_INVOKE is using it (take),
	// until it is used up or put back. Changed with the keeper's lock.
	ready, claimed bool
}

func (k *keptParams) remove(sp *spool) {
	if k.file != "" {
		sp.remove(k.file)
	}
}

// paramKeeper holds verified params until their CAP_INVOKE.
type paramKeeper struct {
	lim       ParamStreamLimits
	threshold uint64
	spool     *spool
	grace     time.Duration // StreamLimits.StallGrace
	mu        sync.Mutex
	m         map[streamKey]*keptParams
	perSend   map[string]int // waiting params per slot (slotOf)
	bytes     uint64
	shared    uint64 // bytes of the callers the policy does not name
	sharedN   int    // their waiting params
	shut      bool   // closeAll ran: nothing is reserved after it
	principal func(sender string) string
}

func newParamKeeper(lim *ParamStreamLimits, streams StreamLimits, principal func(sender string) string, sp *spool) *paramKeeper {
	if lim == nil {
		return nil
	}
	l := *lim
	l.setDefaults()
	streams.setDefaults()
	return &paramKeeper{lim: l, threshold: streams.SpoolThreshold, spool: sp, grace: streams.StallGrace,
		m: map[streamKey]*keptParams{}, perSend: map[string]int{}, principal: principal}
}

// unlink removes k from the table; the lock is held.
func (p *paramKeeper) unlink(k *keptParams) {
	delete(p.m, k.key)
	if p.perSend[k.slot]--; p.perSend[k.slot] <= 0 {
		delete(p.perSend, k.slot)
	}
	p.bytes -= k.size
	if k.shared {
		p.shared -= k.size
		p.sharedN--
	}
}

// expire drops what waited longer than Keep; the lock is held.
func (p *paramKeeper) expire(now time.Time) {
	for _, k := range p.m {
		if k.ready && !k.claimed && now.After(k.expires) {
			p.unlink(k)
			k.remove(p.spool)
		}
	}
}

// fits reports whether k fits beside what waits, and, when not, whether
// only its slot's count is full; the lock is held.
func (p *paramKeeper) fits(k *keptParams) (ok, slotFull bool) {
	sharedMax := max(1, p.lim.MaxKept-p.lim.MaxKept/4)
	switch {
	case p.perSend[k.slot] >= p.lim.PerSender:
		return false, true
	case len(p.m) >= p.lim.MaxKept || p.bytes+k.size > p.lim.MaxBytes:
	case k.shared && (p.sharedN >= sharedMax || p.shared+k.size > p.lim.MaxBytes-p.lim.NamedReserve):
	default:
		return true, false
	}
	return false, false
}

// link counts k among the waiting params; the lock is held.
func (p *paramKeeper) link(k *keptParams) {
	p.m[k.key] = k
	p.perSend[k.slot]++
	p.bytes += k.size
	if k.shared {
		p.shared += k.size
		p.sharedN++
	}
}

// evictOld unlinks the oldest waiting params of a caller the policy does
// not name (in slot, when slot is not "") that waited longer than the
// grace, and returns them (nil: none); their file is left to the caller,
// which links them again if the room they made does not suffice. The
// lock is held.
func (p *paramKeeper) evictOld(slot string, now time.Time) *keptParams {
	var old *keptParams
	for _, k := range p.m {
		if k.shared && k.ready && !k.claimed && (slot == "" || k.slot == slot) && now.Sub(k.kept) > p.grace &&
			(old == nil || k.kept.Before(old.kept)) {
			old = k
		}
	}
	if old != nil {
		p.unlink(old)
	}
	return old
}

// reserve makes room for the verified params of info, from peer (the
// transport's), before the ledger records the STREAM_END; fill then
// stores them, or cancel gives the room back.
func (p *paramKeeper) reserve(info StreamInfo, peer string, now time.Time) (*keptParams, error) {
	bucket := p.principal(info.Sender)
	shared := bucket == SharedPrincipal
	if !shared {
		peer = ""
	}
	k := &keptParams{key: streamKey{info.Sender, info.StreamID}, bucket: bucket, slot: slotOf(bucket, peer), shared: shared,
		sum: info.SHA256, size: info.Size, kept: now, expires: now.Add(p.lim.Keep)}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shut {
		return nil, agentClosed()
	}
	p.expire(now)
	var gone []*keptParams // unlinked to make room; their files go once k fits
	if old := p.m[k.key]; old != nil {
		// Params a CAP_INVOKE holds stay counted until its run ends:
		// replaced, they were no longer, so that reusing one stream_id
		// let a sender hold any number of them at once (threat: with
		// PerSender 1, three handlers held streamed params, and three
		// spool files were kept).
		if old.claimed {
			return nil, streamRefusal(amp.CodeOverloaded, "params_stream_in_use", info.StreamID,
				"the params of this stream_id are in use by an invocation; retry once it is answered")
		}
		// The same sender reused the stream_id: the newer content wins
		// (a CAP_INVOKE names the SHA-256 it means).
		p.unlink(old)
		gone = append(gone, old)
	}
	// What gives way is dropped only once the new params fit: refused,
	// they dropped it for nothing (threat: one anonymous STREAM_END that
	// could never fit beside a named caller's params dropped every other
	// unnamed caller's waiting params).
	for {
		ok, slotFull := p.fits(k)
		if ok {
			break
		}
		slot := ""
		if slotFull {
			slot = k.slot
		}
		var old *keptParams
		if !slotFull || shared {
			old = p.evictOld(slot, now)
		}
		if old == nil {
			for _, g := range gone {
				p.link(g)
			}
			return nil, streamRefusal(amp.CodeOverloaded, "params_budget_exceeded", info.StreamID,
				"too many verified params wait for their CAP_INVOKE; invoke or retry later")
		}
		gone = append(gone, old)
	}
	for _, g := range gone {
		g.remove(p.spool)
	}
	// Reserved before any memory or disk is used.
	p.link(k)
	return k, nil
}

// cancel gives back what reserve took for k (nil: nothing).
func (p *paramKeeper) cancel(k *keptParams) {
	if p == nil || k == nil {
		return
	}
	p.mu.Lock()
	if p.m[k.key] == k {
		p.unlink(k)
	}
	p.mu.Unlock()
	k.remove(p.spool)
}

// store fills k with content; on failure it gives k's room back. Params
// that closeAll dropped while they were being filled are not kept: the
// spool file made for them is removed (it was made after closeAll, which
// could not remove it).
func (p *paramKeeper) store(k *keptParams, content io.Reader) error {
	if err := k.fill(content, p.threshold, p.spool); err != nil {
		p.cancel(k)
		return err
	}
	p.mu.Lock()
	kept := p.m[k.key] == k
	k.ready = kept
	p.mu.Unlock()
	if !kept {
		k.remove(p.spool)
		return agentClosed()
	}
	return nil
}

// fill copies exactly k.size bytes of content to memory or a spool file.
func (k *keptParams) fill(content io.Reader, threshold uint64, sp *spool) error {
	if k.size <= threshold {
		k.mem = make([]byte, k.size)
		if _, err := io.ReadFull(content, k.mem); err != nil {
			return unavailable()
		}
		return nil
	}
	f, name, err := sp.create("ampparams-")
	if err != nil {
		return unavailable()
	}
	k.file = name
	n, err := io.Copy(f, io.LimitReader(content, int64(k.size)))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil || uint64(n) != k.size {
		return unavailable()
	}
	return nil
}

// paramsUse is the params a CAP_INVOKE took (take): done uses them up,
// putBack leaves them waiting for a retry. Both may be called on nil and
// more than once: the first call counts.
type paramsUse struct {
	p *paramKeeper
	k *keptParams
}

// done forgets the params for good.
func (u *paramsUse) done() { u.finish(false) }

// putBack leaves the params waiting, as before take: nothing ran.
func (u *paramsUse) putBack() { u.finish(true) }

// finish ends the use, the first time only: the params wait again
// (putBack) unless they were dropped meanwhile (Agent.Close), or they are
// forgotten for good.
func (u *paramsUse) finish(putBack bool) {
	if u == nil || u.k == nil {
		return
	}
	k := u.k
	u.k = nil
	u.p.mu.Lock()
	kept := u.p.m[k.key] == k
	switch {
	case kept && putBack:
		k.claimed = false
	case kept:
		u.p.unlink(k)
	}
	u.p.mu.Unlock()
	if !kept || !putBack {
		k.remove(u.p.spool) // used up, or dropped meanwhile
	}
}

// take returns the params of sender's stream id if their SHA-256 is sum,
// claimed for one CAP_INVOKE: they stay counted, and no other CAP_INVOKE
// can take them, until the use is done or put back. A reference to
// nothing (or to params another CAP_INVOKE holds), or to other content,
// is 4001 and leaves what is kept alone.
func (p *paramKeeper) take(sender string, ref capability.ParamsStream, now time.Time) (*paramsUse, []byte, error) {
	key := streamKey{sender, ref.StreamID}
	p.mu.Lock()
	p.expire(now)
	k := p.m[key]
	if k == nil || !k.ready || k.claimed {
		p.mu.Unlock()
		return nil, nil, streamRefusal(amp.CodeBadRequest, "unknown_params_stream", ref.StreamID,
			"no verified params stream has this stream_id (never acknowledged, already used, or dropped after its time)")
	}
	if subtle.ConstantTimeCompare(k.sum, ref.SHA256) != 1 {
		p.mu.Unlock()
		return nil, nil, streamRefusal(amp.CodeBadRequest, "params_stream_mismatch", ref.StreamID, "the params stream's SHA-256 is not the one named")
	}
	k.claimed = true
	p.mu.Unlock()
	use := &paramsUse{p: p, k: k}
	buf, err := k.read(p.spool)
	if err != nil {
		use.putBack()
		return nil, nil, err
	}
	return use, buf, nil
}

// read returns k's content, checked against its SHA-256 when it comes
// from a file.
func (k *keptParams) read(sp *spool) ([]byte, error) {
	if k.file == "" {
		return k.mem, nil
	}
	f, err := sp.open(k.file)
	if err != nil {
		return nil, unavailable()
	}
	defer f.Close()
	buf := make([]byte, k.size)
	if _, err := io.ReadFull(f, buf); err != nil {
		return nil, unavailable()
	}
	// The file is ours, but it sat on disk: what is used is what was
	// verified.
	if !bytes.Equal(sha256Sum(buf), k.sum) {
		return nil, unavailable()
	}
	return buf, nil
}

// closeAll drops everything kept (Agent.Close).
func (p *paramKeeper) closeAll() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.shut = true
	for _, k := range p.m {
		p.unlink(k)
		if k.ready && !k.claimed {
			k.remove(p.spool) // one in use, or being filled, is removed by its user (finish, store)
		}
	}
}

// WaitingParams returns how many verified params streams wait for their
// CAP_INVOKE.
func (a *Agent) WaitingParams() int {
	if a.params == nil {
		return 0
	}
	a.params.mu.Lock()
	defer a.params.mu.Unlock()
	return len(a.params.m)
}

// streamsServed reports whether STREAM_* are served at all.
func (a *Agent) streamsServed() bool { return a.cfg.Streams != nil || a.params != nil }

// acceptStream decides at STREAM_START whether the agent takes a stream
// of this content type, before anything is reserved; shared: from a
// caller the policy does not name.
func (a *Agent) acceptStream(b amp.StreamStartBody, shared bool) error {
	if b.ContentType == capability.ParamsContentType {
		switch {
		case a.params == nil:
			return streamRefusal(amp.CodeInvalidMessage, "stream_not_accepted", b.StreamID, "this agent does not take invocation params over streams")
		case b.TotalSize > a.params.lim.MaxSize:
			return streamRefusal(amp.CodeInvalidMessage, "limit_exceeded", b.StreamID, "params streams are at most %d bytes", a.params.lim.MaxSize)
		case shared && b.TotalSize > a.params.lim.MaxBytes-a.params.lim.NamedReserve:
			// Such params could never wait for their CAP_INVOKE.
			return streamRefusal(amp.CodeInvalidMessage, "limit_exceeded", b.StreamID, "params streams of a caller the policy does not name are at most %d bytes",
				a.params.lim.MaxBytes-a.params.lim.NamedReserve)
		}
		return nil
	}
	if a.cfg.Streams == nil {
		return streamRefusal(amp.CodeInvalidMessage, "stream_not_accepted", b.StreamID,
			"this agent takes only streams of invocation params (content_type %s)", capability.ParamsContentType)
	}
	return nil
}

// reserveParams makes room for a verified params stream before its
// STREAM_END is recorded (nil for any other stream): 5004
// params_budget_exceeded, retryably, when there is none.
func (a *Agent) reserveParams(ctx context.Context, info StreamInfo, now time.Time) (*keptParams, error) {
	if info.ContentType != capability.ParamsContentType || a.params == nil {
		return nil, nil
	}
	return a.params.reserve(info, streamPeer(admission.PeerOf(ctx)), now)
}

// deliverStream hands a verified stream to where it goes: params to the
// room reserveParams made for them (kept), anything else to
// Config.Streams.
func (a *Agent) deliverStream(ctx context.Context, info StreamInfo, kept *keptParams, content io.Reader) error {
	if kept != nil {
		return a.params.store(kept, content)
	}
	return a.callStreams(ctx, info, content)
}

// callStreams calls Config.Streams, turning a panic into an error (which
// the caller answers with 5001 stream_not_accepted), as callHandler does
// for a capability's handler: the record it made is finished, and no
// ticket of the ledger stays counted for good.
func (a *Agent) callStreams(ctx context.Context, info StreamInfo, content io.Reader) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("the stream handler panicked: %v", p)
		}
	}()
	return a.cfg.Streams(ctx, info, content)
}

// invokeParams returns the CBOR params of inv: inline (use nil), or the
// content of the params stream it names (sent by caller, verified,
// size-bounded), claimed by use: the caller puts them back when its
// refusal is retryable and nothing ran, and uses them up otherwise.
func (a *Agent) invokeParams(caller string, inv capability.Invoke) (params []byte, use *paramsUse, err error) {
	ref, ok, err := capability.ParamsStreamOf(inv)
	switch {
	case err != nil:
		return nil, nil, err
	case !ok:
		return inv.Params, nil, nil
	case a.params == nil:
		return nil, nil, streamRefusal(amp.CodeBadRequest, "params_stream_not_served", ref.StreamID, "this agent does not take invocation params over streams")
	}
	use, params, err = a.params.take(caller, ref, a.cfg.Now())
	return params, use, err
}

func sha256Sum(b []byte) []byte {
	s := sha256.Sum256(b)
	return s[:]
}

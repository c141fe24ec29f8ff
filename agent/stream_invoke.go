package agent

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"io"
	"os"
	"sync"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/capability"
)

// Params of a CAP_INVOKE carried by a stream (docs/SPEC-DECISIONS.md
// STREAM-6). A verified stream whose content_type is
// capability.ParamsContentType is not handed to Config.Streams: the agent
// keeps its content (in memory up to StreamLimits.SpoolThreshold, in a
// file of StreamLimits.SpoolDir beyond) until a CAP_INVOKE from the same
// sender names it (stream_id and SHA-256) in params_stream, or until Keep
// passes. That CAP_INVOKE then goes through the whole pipeline with the
// stream's content as its params: the same decoding budget, the same
// input-schema validation as inline params. The content is used once.

// ParamStreamLimits enable and bound params carried by streams. Zero
// fields take the defaults.
type ParamStreamLimits struct {
	// MaxSize caps one params stream (default 64 MiB); a larger
	// STREAM_START is refused for good (1001 limit_exceeded).
	MaxSize uint64
	// PerSender caps the verified params one sender may have waiting for
	// their CAP_INVOKE (default 4; senders are counted by principal, like
	// open streams: see Principals), MaxKept those of all senders (default
	// 64), MaxBytes their bytes in all (default 256 MiB). Beyond them the
	// STREAM_END is refused retryably (5004 params_budget_exceeded) and
	// the stream stays open until it is retried or idle.
	PerSender, MaxKept int
	MaxBytes           uint64
	// Keep is how long verified params wait for their CAP_INVOKE (default
	// 10 min, on the agent's clock); then they are dropped.
	Keep time.Duration
}

func (l *ParamStreamLimits) setDefaults() {
	if l.MaxSize == 0 {
		l.MaxSize = 64 << 20
	}
	if l.PerSender <= 0 {
		l.PerSender = 4
	}
	if l.MaxKept <= 0 {
		l.MaxKept = 64
	}
	if l.MaxBytes == 0 {
		l.MaxBytes = 256 << 20
	}
	if l.Keep <= 0 {
		l.Keep = 10 * time.Minute
	}
}

// keptParams is the verified content of one params stream.
type keptParams struct {
	bucket  string // the sender's principal, charged for it
	sum     []byte
	size    uint64
	mem     []byte // content when small
	file    string // spool file otherwise
	expires time.Time
}

func (k *keptParams) remove() {
	if k.file != "" {
		os.Remove(k.file)
	}
}

// paramKeeper holds verified params until their CAP_INVOKE.
type paramKeeper struct {
	lim       ParamStreamLimits
	threshold uint64
	dir       string
	mu        sync.Mutex
	m         map[streamKey]*keptParams
	perSend   map[string]int // waiting params per principal
	bytes     uint64
	principal func(sender string) string
}

func newParamKeeper(lim *ParamStreamLimits, streams StreamLimits, principal func(sender string) string) *paramKeeper {
	if lim == nil {
		return nil
	}
	l := *lim
	l.setDefaults()
	streams.setDefaults()
	return &paramKeeper{lim: l, threshold: streams.SpoolThreshold, dir: streams.SpoolDir,
		m: map[streamKey]*keptParams{}, perSend: map[string]int{}, principal: principal}
}

// unlink removes k from the table; the lock is held.
func (p *paramKeeper) unlink(key streamKey, k *keptParams) {
	delete(p.m, key)
	if p.perSend[k.bucket]--; p.perSend[k.bucket] <= 0 {
		delete(p.perSend, k.bucket)
	}
	p.bytes -= k.size
}

// expire drops what waited longer than Keep; the lock is held.
func (p *paramKeeper) expire(now time.Time) {
	for key, k := range p.m {
		if now.After(k.expires) {
			p.unlink(key, k)
			k.remove()
		}
	}
}

// keep stores the verified content of a params stream.
func (p *paramKeeper) keep(info StreamInfo, content io.Reader, now time.Time) error {
	key := streamKey{info.Sender, info.StreamID}
	p.mu.Lock()
	p.expire(now)
	if old := p.m[key]; old != nil {
		// The same sender reused the stream_id: the newer content wins
		// (a CAP_INVOKE names the SHA-256 it means).
		p.unlink(key, old)
		old.remove()
	}
	bucket := p.principal(info.Sender)
	if p.perSend[bucket] >= p.lim.PerSender || len(p.m) >= p.lim.MaxKept || p.bytes+info.Size > p.lim.MaxBytes {
		p.mu.Unlock()
		return streamRefusal(amp.CodeOverloaded, "params_budget_exceeded", info.StreamID,
			"too many verified params wait for their CAP_INVOKE; invoke or retry later")
	}
	// Reserved before any memory or disk is used.
	k := &keptParams{bucket: bucket, sum: info.SHA256, size: info.Size, expires: now.Add(p.lim.Keep)}
	p.m[key] = k
	p.perSend[bucket]++
	p.bytes += info.Size
	p.mu.Unlock()
	err := k.fill(content, p.threshold, p.dir)
	if err != nil {
		p.mu.Lock()
		if p.m[key] == k {
			p.unlink(key, k)
		}
		p.mu.Unlock()
		k.remove()
	}
	return err
}

// fill copies exactly k.size bytes of content to memory or a spool file.
func (k *keptParams) fill(content io.Reader, threshold uint64, dir string) error {
	if k.size <= threshold {
		k.mem = make([]byte, k.size)
		if _, err := io.ReadFull(content, k.mem); err != nil {
			return unavailable()
		}
		return nil
	}
	f, err := os.CreateTemp(dir, "ampparams-*")
	if err != nil {
		return unavailable()
	}
	k.file = f.Name()
	n, err := io.Copy(f, io.LimitReader(content, int64(k.size)))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil || uint64(n) != k.size {
		return unavailable()
	}
	return nil
}

// take returns and forgets the params of sender's stream id if their
// SHA-256 is sum. A reference to nothing, or to other content, is 4001 and
// leaves what is kept alone.
func (p *paramKeeper) take(sender string, ref capability.ParamsStream, now time.Time) ([]byte, error) {
	key := streamKey{sender, ref.StreamID}
	p.mu.Lock()
	p.expire(now)
	k := p.m[key]
	if k == nil {
		p.mu.Unlock()
		return nil, streamRefusal(amp.CodeBadRequest, "unknown_params_stream", ref.StreamID,
			"no verified params stream has this stream_id (never acknowledged, already used, or dropped after its time)")
	}
	if subtle.ConstantTimeCompare(k.sum, ref.SHA256) != 1 {
		p.mu.Unlock()
		return nil, streamRefusal(amp.CodeBadRequest, "params_stream_mismatch", ref.StreamID, "the params stream's SHA-256 is not the one named")
	}
	p.unlink(key, k)
	p.mu.Unlock()
	if k.file == "" {
		return k.mem, nil
	}
	defer k.remove()
	f, err := os.Open(k.file)
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
	for key, k := range p.m {
		p.unlink(key, k)
		k.remove()
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
// of this content type, before anything is reserved.
func (a *Agent) acceptStream(b amp.StreamStartBody) error {
	if b.ContentType == capability.ParamsContentType {
		switch {
		case a.params == nil:
			return streamRefusal(amp.CodeInvalidMessage, "stream_not_accepted", b.StreamID, "this agent does not take invocation params over streams")
		case b.TotalSize > a.params.lim.MaxSize:
			return streamRefusal(amp.CodeInvalidMessage, "limit_exceeded", b.StreamID, "params streams are at most %d bytes", a.params.lim.MaxSize)
		}
		return nil
	}
	if a.cfg.Streams == nil {
		return streamRefusal(amp.CodeInvalidMessage, "stream_not_accepted", b.StreamID,
			"this agent takes only streams of invocation params (content_type %s)", capability.ParamsContentType)
	}
	return nil
}

// deliverStream hands a verified stream to where it goes: params to the
// keeper, anything else to Config.Streams.
func (a *Agent) deliverStream(ctx context.Context, info StreamInfo, content io.Reader) error {
	if info.ContentType == capability.ParamsContentType && a.params != nil {
		return a.params.keep(info, content, a.cfg.Now())
	}
	return a.cfg.Streams(ctx, info, content)
}

// invokeParams returns the CBOR params of inv: inline, or the content of
// the params stream it names (sent by caller, verified, size-bounded).
func (a *Agent) invokeParams(caller string, inv capability.Invoke) ([]byte, error) {
	ref, ok, err := capability.ParamsStreamOf(inv)
	switch {
	case err != nil:
		return nil, err
	case !ok:
		return inv.Params, nil
	case a.params == nil:
		return nil, streamRefusal(amp.CodeBadRequest, "params_stream_not_served", ref.StreamID, "this agent does not take invocation params over streams")
	}
	return a.params.take(caller, ref, a.cfg.Now())
}

func sha256Sum(b []byte) []byte {
	s := sha256.Sum256(b)
	return s[:]
}

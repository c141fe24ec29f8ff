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
	"unicode/utf8"

	"github.com/ampbundle/ampbundle/agent/ledger"
	"github.com/ampbundle/ampbundle/amp"
)

// StreamInfo describes a verified stream handed to Config.Streams.
type StreamInfo struct {
	// Sender is the authenticated (bare) DID that sent the stream.
	Sender string
	// StreamID, ContentType and Filename are as in STREAM_START.
	StreamID, ContentType, Filename string
	// Size is the content's length in bytes; Chunks its chunk count.
	Size, Chunks uint64
	// SHA256 is the verified hash of the whole content.
	SHA256 []byte
}

// StreamLimits bound what peers may make the agent hold for streams
// (RFC 001 §6.2). Zero fields take the defaults.
type StreamLimits struct {
	// PerSender caps the open streams of one sender (default 4); beyond
	// it STREAM_START is refused, retryably (5004 too_many_streams).
	// Senders are counted by principal (see Principals): the callers the
	// policy does not name share one PerSender.
	PerSender int
	// MaxStreams caps the open streams of all senders together (default
	// 256), refused the same way.
	MaxStreams int
	// MaxBytes caps the total_size of all open streams together (default
	// 256 MiB): a STREAM_START that would go over it is refused retryably
	// (5004 stream_budget_exceeded); one larger than MaxBytes on its own
	// is refused for good (1001 limit_exceeded).
	MaxBytes uint64
	// MaxChunks caps total_chunks of one stream (default 1,048,576).
	MaxChunks uint64
	// Idle is how long a stream may go without a STREAM_START, STREAM_DATA
	// or STREAM_END before it is reclaimed, its spool file removed (default
	// 5 min, on the agent's clock).
	Idle time.Duration
	// SpoolThreshold: a stream whose total_size is larger is written to a
	// temporary file in SpoolDir, never held in memory (default 1 MiB).
	SpoolThreshold uint64
	// SpoolDir is where spool files go (default os.TempDir()).
	SpoolDir string
}

func (l *StreamLimits) setDefaults() {
	if l.PerSender <= 0 {
		l.PerSender = 4
	}
	if l.MaxStreams <= 0 {
		l.MaxStreams = 256
	}
	if l.MaxBytes == 0 {
		l.MaxBytes = 256 << 20
	}
	if l.MaxChunks == 0 {
		l.MaxChunks = 1 << 20
	}
	if l.Idle <= 0 {
		l.Idle = 5 * time.Minute
	}
	if l.SpoolThreshold == 0 {
		l.SpoolThreshold = 1 << 20
	}
	if l.SpoolDir == "" {
		l.SpoolDir = os.TempDir()
	}
}

// noReply is the dispatch type of a message that is processed and needs no
// reply (STREAM_START, STREAM_DATA).
const noReply amp.Type = 0

type streamKey struct{ sender, id string }

// inStream is one stream being received.
type inStream struct {
	mu       sync.Mutex
	key      streamKey
	bucket   string // the sender's principal, charged for the stream
	start    amp.StreamStartBody
	mem      []byte   // content when not spooled
	file     *os.File // spool file, or nil
	have     []uint64 // bitmap of received chunks
	received uint64
	last     time.Time // last activity
	closed   bool      // removed from the table; resources released
}

// streams is the agent's table of open streams.
type streams struct {
	mu        sync.Mutex
	lim       StreamLimits
	open      map[streamKey]*inStream
	perSend   map[string]int // open streams per principal
	inFlight  uint64
	principal func(sender string) string
}

func newStreams(lim StreamLimits, principal func(sender string) string) *streams {
	lim.setDefaults()
	return &streams{lim: lim, open: map[streamKey]*inStream{}, perSend: map[string]int{}, principal: principal}
}

// release frees s's resources; the table lock is held.
func (t *streams) release(s *inStream) {
	if t.open[s.key] != s {
		return
	}
	delete(t.open, s.key)
	if t.perSend[s.bucket]--; t.perSend[s.bucket] <= 0 {
		delete(t.perSend, s.bucket)
	}
	t.inFlight -= s.start.TotalSize
}

// drop removes s from the table and deletes its spool file. s.mu is held.
func (t *streams) drop(s *inStream) {
	t.mu.Lock()
	t.release(s)
	t.mu.Unlock()
	s.closeFile()
}

func (s *inStream) closeFile() {
	s.closed = true
	s.mem = nil
	if s.file != nil {
		name := s.file.Name()
		s.file.Close()
		os.Remove(name)
		s.file = nil
	}
}

// reclaim drops the streams idle since before now - Idle and returns how
// many it dropped.
func (t *streams) reclaim(now time.Time) int {
	t.mu.Lock()
	var idle []*inStream
	for _, s := range t.open {
		idle = append(idle, s)
	}
	t.mu.Unlock()
	n := 0
	for _, s := range idle {
		if !s.mu.TryLock() {
			continue // in use right now: not idle
		}
		if !s.closed && now.Sub(s.last) > t.lim.Idle {
			t.drop(s)
			n++
		}
		s.mu.Unlock()
	}
	return n
}

// closeAll drops every stream (Agent.Close).
func (t *streams) closeAll() {
	t.mu.Lock()
	all := make([]*inStream, 0, len(t.open))
	for _, s := range t.open {
		all = append(all, s)
	}
	t.mu.Unlock()
	for _, s := range all {
		s.mu.Lock()
		t.drop(s)
		s.mu.Unlock()
	}
}

// ReclaimStreams drops the streams that have been idle longer than
// StreamLimits.Idle, removing their spool files, and returns how many.
// Handle also does it now and then.
func (a *Agent) ReclaimStreams() int { return a.streams.reclaim(a.cfg.Now()) }

// OpenStreams returns how many streams are open.
func (a *Agent) OpenStreams() int {
	a.streams.mu.Lock()
	defer a.streams.mu.Unlock()
	return len(a.streams.open)
}

// streamRefusal is a refusal about a stream: its ERROR carries details
// {"reason": name, "stream_id": id} so that the sender knows which stream
// failed and why (docs/SPEC-DECISIONS.md STREAM-4).
func streamRefusal(code amp.Code, name amp.ErrName, id string, format string, args ...any) *amp.Error {
	d := map[string]any{"reason": string(name)}
	if len(id) <= maxStreamID && utf8.ValidString(id) {
		d["stream_id"] = id // a longer one was never accepted: not echoed
	}
	return amp.Named(code, name, format, args...).WithDetails(d)
}

// maxStreamID bounds stream_id (bytes).
const maxStreamID = 256

// stream handles a verified, addressed STREAM_START, STREAM_DATA or
// STREAM_END (RFC 001 §6.2–6.3; docs/SPEC-DECISIONS.md STREAM-1..).
func (a *Agent) stream(ctx context.Context, m *amp.Message, t *ledger.Ticket) (amp.Type, []byte, error) {
	if !a.streamsServed() {
		return 0, nil, amp.Named(amp.CodeUnknownType, "not_served", "this agent does not serve %s messages", m.Type.Name())
	}
	sender := amp.BareDID(m.From)
	if !a.cfg.Policy.AllowCaller(sender) {
		return 0, nil, unauthorized()
	}
	now := a.cfg.Now()
	a.streams.reclaim(now)
	switch m.Type {
	case amp.TypeStreamStart:
		b, err := amp.DecodeStreamStart(m.Body)
		if err != nil {
			return 0, nil, err
		}
		return noReply, nil, a.streamStart(sender, b, now)
	case amp.TypeStreamData:
		b, err := amp.DecodeStreamData(m.Body)
		if err != nil {
			return 0, nil, err
		}
		return noReply, nil, a.streamData(sender, b, now)
	default:
		b, err := amp.DecodeStreamEnd(m.Body)
		if err != nil {
			return 0, nil, err
		}
		return a.streamEnd(ctx, sender, b, now, t)
	}
}

func (a *Agent) streamStart(sender string, b amp.StreamStartBody, now time.Time) error {
	t := a.streams
	// The layout, hash and size checks are the Reassembler's (RFC 001 §6.2).
	if len(b.StreamID) > maxStreamID || len(b.ContentType) > 256 || len(b.Filename) > 1024 {
		return streamRefusal(amp.CodeInvalidMessage, "limit_exceeded", "", "stream_id, content_type or filename is too long")
	}
	if err := a.acceptStream(b); err != nil {
		return err
	}
	if _, err := amp.NewReassembler(b, t.lim.MaxBytes); err != nil {
		return streamRefusal(amp.CodeOf(err), amp.NameOf(err), b.StreamID, "%s", amp.AsError(err).Message)
	}
	if b.TotalChunks > t.lim.MaxChunks {
		return streamRefusal(amp.CodeInvalidMessage, "limit_exceeded", b.StreamID, "a stream has at most %d chunks", t.lim.MaxChunks)
	}
	s := &inStream{key: streamKey{sender, b.StreamID}, bucket: t.principal(sender), start: b, have: make([]uint64, (b.TotalChunks+63)/64), last: now}
	t.mu.Lock()
	switch {
	case t.open[s.key] != nil:
		t.mu.Unlock()
		return streamRefusal(amp.CodeInvalidMessage, "stream_exists", b.StreamID, "a stream with this stream_id is already open")
	case t.perSend[s.bucket] >= t.lim.PerSender:
		t.mu.Unlock()
		return streamRefusal(amp.CodeOverloaded, "too_many_streams", b.StreamID, "this sender has %d open streams, the most allowed (callers the policy does not name share them); finish one and retry", t.lim.PerSender)
	case len(t.open) >= t.lim.MaxStreams:
		t.mu.Unlock()
		return streamRefusal(amp.CodeOverloaded, "too_many_streams", b.StreamID, "the agent has too many open streams; retry later")
	case t.inFlight+b.TotalSize > t.lim.MaxBytes:
		t.mu.Unlock()
		return streamRefusal(amp.CodeOverloaded, "stream_budget_exceeded", b.StreamID, "the agent holds too many stream bytes; retry later")
	}
	// Reserved before any memory or disk is used.
	t.open[s.key] = s
	t.perSend[s.bucket]++
	t.inFlight += b.TotalSize
	s.mu.Lock()
	t.mu.Unlock()
	defer s.mu.Unlock()
	if b.TotalSize > t.lim.SpoolThreshold {
		f, err := os.CreateTemp(t.lim.SpoolDir, "ampstream-*")
		if err == nil {
			err = f.Truncate(int64(b.TotalSize))
			if err != nil {
				f.Close()
				os.Remove(f.Name())
			}
		}
		if err != nil {
			a.log.Error("cannot create a stream spool file", "err", err)
			t.drop(s)
			return unavailable()
		}
		s.file = f
	} else {
		s.mem = make([]byte, b.TotalSize)
	}
	return nil
}

// lookup finds the open stream of sender, locked. The stream's lock is
// waited for through idle, without a CPU slot: its holder may be handing
// the stream to the application (streamEnd), and needs a slot back when
// that returns; waiting for the lock while holding a slot would let a
// sender fill every slot with copies aimed at one stream and stop the
// agent.
func (t *streams) lookup(sender, id string, idle func(func())) (*inStream, error) {
	t.mu.Lock()
	s := t.open[streamKey{sender, id}]
	t.mu.Unlock()
	if s == nil {
		return nil, streamRefusal(amp.CodeInvalidMessage, "unknown_stream", id, "no open stream has this stream_id (never started, finished, or reclaimed after its timeout)")
	}
	if !s.mu.TryLock() {
		idle(s.mu.Lock)
	}
	if s.closed {
		s.mu.Unlock()
		return nil, streamRefusal(amp.CodeInvalidMessage, "unknown_stream", id, "no open stream has this stream_id (never started, finished, or reclaimed after its timeout)")
	}
	return s, nil
}

func (s *inStream) chunkLen(i uint64) uint64 {
	if i+1 < s.start.TotalChunks {
		return s.start.ChunkSize
	}
	return s.start.TotalSize - (s.start.TotalChunks-1)*s.start.ChunkSize
}

func (a *Agent) streamData(sender string, d amp.StreamDataBody, now time.Time) error {
	s, err := a.streams.lookup(sender, d.StreamID, a.idle)
	if err != nil {
		return err
	}
	defer s.mu.Unlock()
	switch {
	case d.Index >= s.start.TotalChunks:
		return streamRefusal(amp.CodeInvalidMessage, "chunk_out_of_range", d.StreamID, "chunk index is out of range")
	case uint64(len(d.Data)) != s.chunkLen(d.Index):
		return streamRefusal(amp.CodeInvalidMessage, "wrong_chunk_size", d.StreamID, "chunk has the wrong size")
	}
	s.last = now
	off := d.Index * s.start.ChunkSize
	if s.have[d.Index/64]&(1<<(d.Index%64)) != 0 {
		// A chunk received twice: identical bytes are ignored (RFC 001
		// §6.2), different bytes end the stream.
		prev := make([]byte, len(d.Data))
		if s.file != nil {
			if _, err := s.file.ReadAt(prev, int64(off)); err != nil {
				// Retryable: the stream stays, the sender may resend.
				a.log.Error("cannot read a stream spool file", "err", err)
				return unavailable()
			}
		} else {
			copy(prev, s.mem[off:])
		}
		if subtle.ConstantTimeCompare(prev, d.Data) == 1 {
			return nil
		}
		a.streams.drop(s)
		return streamRefusal(amp.CodeInvalidMessage, "conflicting_chunk", d.StreamID, "chunk was received twice with different bytes; the stream is discarded")
	}
	if s.file != nil {
		if _, err := s.file.WriteAt(d.Data, int64(off)); err != nil {
			// Retryable: the chunk is not counted, the stream stays (and
			// is reclaimed when idle), so the sender's retry can land.
			a.log.Error("cannot write a stream spool file", "err", err)
			return unavailable()
		}
	} else {
		copy(s.mem[off:], d.Data)
	}
	s.have[d.Index/64] |= 1 << (d.Index % 64)
	s.received++
	return nil
}

// streamEnd hands a complete, verified stream to the application. The
// stream is dropped once its outcome is final: accepted, a hash mismatch,
// a refusal for good. A retryable failure (reading the spool file, or a
// retryable *amp.Error of the application) keeps it, so that the sender's
// retry of the STREAM_END with the same id (RFC 001 §16.3) can succeed;
// it is reclaimed when idle otherwise. An accepted stream's ACK is recorded
// durably in the ledger (as if a handler ran: the application acted on
// it), so that a replay gets the same ACK for the message's ttl however
// busy the ledger's volatile cache is.
func (a *Agent) streamEnd(ctx context.Context, sender string, e amp.StreamEndBody, now time.Time, t *ledger.Ticket) (amp.Type, []byte, error) {
	s, err := a.streams.lookup(sender, e.StreamID, a.idle)
	if err != nil {
		return 0, nil, err
	}
	defer s.mu.Unlock()
	s.last = now
	if s.received != s.start.TotalChunks {
		// The stream stays open until its timeout: the sender may send
		// the missing chunks and a new STREAM_END (STREAM-3).
		return 0, nil, streamRefusal(amp.CodeInvalidMessage, "missing_chunks", e.StreamID, "%d of %d chunks are missing", s.start.TotalChunks-s.received, s.start.TotalChunks)
	}
	var content io.ReadSeeker = bytes.NewReader(s.mem)
	if s.file != nil {
		content = io.NewSectionReader(s.file, 0, int64(s.start.TotalSize))
	}
	h := sha256.New()
	if _, err := io.Copy(h, content); err != nil {
		a.log.Error("cannot read a stream spool file", "err", err)
		return 0, nil, unavailable()
	}
	sum := h.Sum(nil)
	if subtle.ConstantTimeCompare(sum, e.Hash) != 1 {
		a.streams.drop(s)
		return 0, nil, streamRefusal(amp.CodeInvalidMessage, "hash_mismatch", e.StreamID, "the stream's SHA-256 does not match its STREAM_END hash; the transfer is rejected")
	}
	if _, err := content.Seek(0, io.SeekStart); err != nil {
		return 0, nil, unavailable()
	}
	info := StreamInfo{Sender: sender, StreamID: s.start.StreamID, ContentType: s.start.ContentType, Filename: s.start.Filename,
		Size: s.start.TotalSize, Chunks: s.start.TotalChunks, SHA256: sum}
	var herr error
	a.idle(func() { herr = a.deliverStream(ctx, info, io.LimitReader(content, int64(s.start.TotalSize))) })
	if herr != nil {
		if _, ok := herr.(*amp.Error); !ok {
			a.log.Error("stream handler failed", "err", herr, "from", sender, "stream_id", s.start.StreamID)
			herr = streamRefusal(amp.CodeInternalError, "stream_not_accepted", s.start.StreamID, "the application did not accept the stream")
		}
		if !amp.CodeOf(herr).Retryable() {
			a.streams.drop(s)
		}
		return 0, nil, herr
	}
	a.streams.drop(s)
	var rerr error
	a.idle(func() { rerr = t.Running() })
	if rerr != nil {
		// The stream was accepted: the ACK is still sent, kept in the
		// volatile cache only.
		a.log.Warn("stream ack not recorded durably", "err", rerr, "from", sender, "stream_id", s.start.StreamID)
	}
	n, ok := s.start.TotalChunks, true
	body, err := amp.Marshal(amp.AckBody{AckSource: amp.AckFromRecipient, ReceivedAt: uint64(now.UnixMilli()),
		StreamID: s.start.StreamID, ChunksReceived: &n, Verified: &ok})
	if err != nil {
		return 0, nil, amp.Wrap(amp.CodeInternalError, err, "cannot encode the ack")
	}
	return amp.TypeAck, body, nil
}

package agent

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"io"
	"maps"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/ampbundle/ampbundle/admission"
	"github.com/ampbundle/ampbundle/agent/ledger"
	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/internal/limit"
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
	// Senders are counted by principal (see Principals); the callers the
	// policy does not name are counted by peer (see PeerShare): those of
	// one peer share one PerSender.
	PerSender int
	// MaxStreams caps the open streams of all senders together (default
	// 256), refused the same way; the callers the policy does not name
	// hold at most three quarters of them together. When a cap is reached,
	// STREAM_START first evicts an open stream of a caller the policy does
	// not name (of the same peer, for its peer's cap) that no longer keeps
	// pace (StallGrace, MinRate): a stalled or finished-but-unended stream
	// gives its slot back within seconds when slots are contended.
	MaxStreams int
	// MaxBytes caps the bytes charged for all open streams together
	// (default 256 MiB): a STREAM_START charges its total_size, and one
	// that would go over MaxBytes or a share below is refused retryably
	// (5004 stream_budget_exceeded); one larger than MaxBytes, or than a
	// share of its sender on its own, is refused for good (1001
	// limit_exceeded).
	MaxBytes uint64
	// SenderBytes caps what the open streams of one sender, counted by its
	// DID, are charged (default MaxBytes/4, but at least the largest params
	// stream when ParamStreams are served; at most MaxBytes).
	SenderBytes uint64
	// PeerShare: the open streams of the callers the policy does not name
	// that came from one peer are charged at most MaxBytes/PeerShare
	// (default 4, as ampagent serve --peer-share; but at least the largest
	// params stream), so that fresh did:keys from one host hold no more
	// than one key. A peer is admission.PeerOf's IPv4 address, but for
	// streams an IPv6 peer is its /48, not its /64: streams are held for
	// seconds to minutes, and one site's /48 holds 65,536 /64s
	// (docs/SPEC-DECISIONS.md STREAM-7). Callers the
	// policy names are bounded by SenderBytes alone: a peer's unnamed
	// callers (a NAT, a proxy) cannot take their room. A message that no
	// transport named a peer for (Handle called in process) is charged to
	// no peer.
	PeerShare int
	// NamedReserve is the part of MaxBytes that only callers the policy
	// names (Principals) may hold: the other callers, all together, are
	// charged at most MaxBytes - NamedReserve (default MaxBytes/4).
	NamedReserve uint64
	// StallGrace and MinRate give back what a stalled stream declared but
	// did not receive. A stream spooled to a file (larger than
	// SpoolThreshold) is charged its whole total_size while it keeps
	// pace: a new chunk at least every StallGrace (default 10 s), and,
	// StallGrace after it started, at least MinRate bytes a second since
	// it started (default admission.MinDataRate, 128 KiB/s). Once it falls
	// behind, its charge drops to what its spool file holds, up to the end
	// of the furthest chunk written (the file is never extended ahead of
	// its chunks: on a file system without holes the rest would hold disk
	// too; docs/SPEC-DECISIONS.md STREAM-14), and the stream stays open.
	// Its next chunk charges the whole rest again only when the stream has
	// caught up with that pace, counted from its start; otherwise it
	// charges what its file then holds plus MinRate × StallGrace (a
	// look-ahead, given back at the next check while it stays behind),
	// or, while that does not fit, only what its file holds, or is
	// refused retryably (5004 stream_budget_exceeded) when not even that
	// fits. A stream held in memory is charged its whole size while it is
	// open.
	StallGrace time.Duration
	MinRate    uint64
	// MaxChunks caps total_chunks of one stream (default 1,048,576).
	MaxChunks uint64
	// Idle is how long a stream may go without a STREAM_START, STREAM_DATA
	// or STREAM_END before it is reclaimed, its spool file removed (default
	// 5 min, on the agent's clock).
	Idle time.Duration
	// SpoolThreshold: a stream whose total_size is larger is written to a
	// temporary file in SpoolDir, never held in memory (default 1 MiB).
	SpoolThreshold uint64
	// SpoolDir is where spool files go (default os.TempDir()). The agent
	// opens it once, in New, and makes, reopens and removes its spool files
	// through the directory it opened, never by this path again: a
	// directory swapped in at the path later is not used.
	SpoolDir string
	// SpoolRoot, when set, is the spool directory already open, used
	// instead of SpoolDir (a caller that checked the directory it opened,
	// as ampagent serve does). The agent does not close it; its caller
	// keeps it open until every agent using it is closed.
	SpoolRoot *os.Root
}

func (l *StreamLimits) setDefaults() {
	limit.Default(&l.PerSender, 4)
	limit.Default(&l.MaxStreams, 256)
	limit.Default(&l.MaxBytes, 256<<20)
	limit.Default(&l.PeerShare, 4)
	limit.Default(&l.NamedReserve, l.MaxBytes/4)
	l.NamedReserve = min(l.NamedReserve, l.MaxBytes)
	limit.Default(&l.StallGrace, 10*time.Second)
	limit.Default(&l.MinRate, admission.MinDataRate)
	limit.Default(&l.MaxChunks, 1<<20)
	limit.Default(&l.Idle, 5*time.Minute)
	limit.Default(&l.SpoolThreshold, 1<<20)
	if l.SpoolDir == "" {
		l.SpoolDir = os.TempDir()
	}
}

// shares returns the byte caps of one sender, of one peer's unnamed
// callers and of all unnamed callers (l has its defaults). largest is the
// largest stream the agent must be able to take from one sender (the
// largest params stream; 0: none).
func (l *StreamLimits) shares(largest uint64) (sender, peer, shared uint64) {
	largest = min(largest, l.MaxBytes)
	sender = l.SenderBytes
	if sender == 0 {
		sender = max(l.MaxBytes/4, largest)
	}
	sender = min(sender, l.MaxBytes)
	peer = min(max(l.MaxBytes/uint64(l.PeerShare), largest), l.MaxBytes)
	return sender, peer, l.MaxBytes - l.NamedReserve
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
	peer     string // its peer (streamPeer) when unnamed, or ""
	slot     string // whose open-stream count it is in (slotOf)
	shared   bool   // charged to the unnamed callers' part of the budget
	start    amp.StreamStartBody
	mem      []byte   // content when not spooled
	file     *os.File // spool file, or nil
	fileName string   // its name in the spool directory
	spool    *spool
	have     []uint64 // bitmap of received chunks
	received uint64
	last     time.Time // last activity (a new chunk, or an END of a complete stream)
	closed   bool      // removed from the table; resources released
	// The charge (StreamLimits.StallGrace): charged is what the budgets
	// hold for the stream (changed with both locks held), got the
	// content bytes received, ext the end of the furthest chunk written
	// to the spool file (its length: what a file system without holes
	// holds for it, whatever was received). The pace counts from
	// started, by got; lastNew is the last new chunk (or started). A
	// stream that fell behind is charged ext (plus a look-ahead after a
	// chunk).
	charged, got, ext uint64
	started, lastNew  time.Time
	// sum is the content's SHA-256, computed at the first STREAM_END
	// that found every chunk: the content cannot change after that (a
	// chunk again with other bytes ends the stream), so a later
	// STREAM_END is compared with it, never hashes the content again.
	sum []byte
}

// streams is the agent's table of open streams.
type streams struct {
	mu      sync.Mutex
	lim     StreamLimits
	spool   *spool // where spool files are made (nil: no stream is served)
	open    map[streamKey]*inStream
	perSend map[string]int // open streams per slot (slotOf)
	// sharedOpen counts the open streams of unnamed callers, at most
	// sharedSlots.
	sharedOpen, sharedSlots int
	principal               func(sender string) string
	// Bytes charged: in all, per sender DID, per peer (unnamed callers),
	// and for all unnamed callers; and the caps of the last three.
	inFlight, shared              uint64
	bySender, byPeer              map[string]uint64
	senderCap, peerCap, sharedCap uint64
	// shut: closeAll ran (set with mu held). A stream in use then is
	// closed by its holder (unlock); no stream is opened after it.
	shut atomic.Bool
}

// newStreams makes the table; params, when set, are the limits of params
// streams, the largest of which one sender must be able to send.
func newStreams(lim StreamLimits, params *ParamStreamLimits, principal func(sender string) string, sp *spool) *streams {
	lim.setDefaults()
	var largest uint64
	if params != nil {
		p := *params
		p.setDefaults()
		largest = p.MaxSize
	}
	t := &streams{lim: lim, spool: sp, open: map[streamKey]*inStream{}, perSend: map[string]int{}, principal: principal,
		bySender: map[string]uint64{}, byPeer: map[string]uint64{}, sharedSlots: max(1, lim.MaxStreams-lim.MaxStreams/4)}
	t.senderCap, t.peerCap, t.sharedCap = lim.shares(largest)
	return t
}

// room says why n more bytes charged for s would not fit, or "" when they
// fit; the table lock is held. The answers are fixed texts: nothing of the
// peer's is echoed.
func (t *streams) room(s *inStream, n uint64) string {
	switch {
	case t.inFlight+n > t.lim.MaxBytes:
		return "the agent holds too many stream bytes; retry later"
	case t.bySender[s.key.sender]+n > t.senderCap:
		return "this sender holds its share of the stream bytes; finish a stream and retry"
	case s.shared && t.shared+n > t.sharedCap:
		return "callers the policy does not name hold their part of the stream bytes; retry later"
	case s.peer != "" && t.byPeer[s.peer]+n > t.peerCap:
		return "this network holds its share of the stream bytes; retry later"
	}
	return ""
}

// charge adds n bytes to what s is charged (negative: gives them back);
// the table lock and s.mu are held.
func (t *streams) charge(s *inStream, n int64) {
	d := uint64(n)
	s.charged += d
	t.inFlight += d
	addTo(t.bySender, s.key.sender, d)
	if s.shared {
		t.shared += d
	}
	if s.peer != "" {
		addTo(t.byPeer, s.peer, d)
	}
}

// addTo adds d (two's complement: it may take away) to m[k], deleting
// the entry at zero.
func addTo(m map[string]uint64, k string, d uint64) {
	if v := m[k] + d; v != 0 {
		m[k] = v
	} else {
		delete(m, k)
	}
}

// release frees s's resources; the table lock is held.
func (t *streams) release(s *inStream) {
	if t.open[s.key] != s {
		return
	}
	delete(t.open, s.key)
	if t.perSend[s.slot]--; t.perSend[s.slot] <= 0 {
		delete(t.perSend, s.slot)
	}
	if s.shared {
		t.sharedOpen--
	}
	t.charge(s, -int64(s.charged))
}

// streamPeer is the peer that the streams of an unnamed caller are
// counted by: admission.PeerOf's IPv4 address as it is, an IPv6 peer (its
// /64, or an address) by its /48 (StreamLimits.PeerShare), as the
// processing slots count it (admission.Network).
func streamPeer(peer string) string {
	return admission.Network(peer)
}

// slotOf is the open-stream count a stream of bucket from peer (streamPeer,
// unnamed callers only) is in: a named caller's own, or its peer's share
// of the unnamed callers' ("" in process: one for all of them).
func slotOf(bucket, peer string) string {
	if bucket == SharedPrincipal {
		return SharedPrincipal + " " + peer
	}
	return bucket
}

// keepsPace reports whether s, with got bytes received and its last new
// chunk at s.lastNew, keeps its pace at now (StreamLimits.StallGrace,
// MinRate): a new chunk within StallGrace, and the bytes MinRate asks for
// since the stream started, after a grace of StallGrace. s.mu is held.
func (t *streams) keepsPace(s *inStream, got uint64, now time.Time) bool {
	return now.Sub(s.lastNew) <= t.lim.StallGrace && t.onRate(s, got, now)
}

// onRate reports whether got bytes are what MinRate asks of s at now,
// counted from its start after a grace of StallGrace.
func (t *streams) onRate(s *inStream, got uint64, now time.Time) bool {
	rate := int64(min(t.lim.MinRate, 1<<62))
	return now.Sub(s.started) <= admission.DataDeadline(int64(min(got, 1<<62)), rate, t.lim.StallGrace, 0)
}

// lookAhead is what a stream behind its pace is charged beyond what it
// received after a new chunk: MinRate × StallGrace.
func (t *streams) lookAhead() uint64 {
	b := float64(t.lim.MinRate) * t.lim.StallGrace.Seconds()
	if b >= float64(t.lim.MaxBytes) {
		return t.lim.MaxBytes
	}
	return uint64(b)
}

// stall gives back what s is charged beyond what its spool file holds
// (ext: on a file system without holes a chunk written far ahead holds
// the disk before it, STREAM-14); s.mu is held.
func (t *streams) stall(s *inStream) {
	t.mu.Lock()
	t.charge(s, -int64(s.charged-s.ext))
	t.mu.Unlock()
}

// evict drops one open stream of an unnamed caller (of peer, when
// samePeer) that no longer keeps its pace at now, to give its slot to a
// new stream; it reports whether it dropped one. The table lock is held;
// a stream in use right now is not touched.
func (t *streams) evict(peer string, samePeer bool, now time.Time) bool {
	for _, s := range t.open {
		if !s.shared || samePeer && s.peer != peer || !s.mu.TryLock() {
			continue
		}
		if s.closed || t.keepsPace(s, s.got, now) {
			s.mu.Unlock()
			continue
		}
		t.release(s)
		s.closeFile()
		s.mu.Unlock()
		return true
	}
	return false
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
		s.file.Close()
		s.spool.remove(s.fileName)
		s.file = nil
	}
}

// reclaim drops the streams idle since before now - Idle and returns how
// many it dropped; a spooled stream that fell behind its pace gives back
// what it declared but did not receive (StreamLimits.StallGrace).
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
		switch {
		case s.closed:
		case now.Sub(s.last) > t.lim.Idle:
			t.drop(s)
			n++
		case s.file != nil && s.charged > s.ext && !t.keepsPace(s, s.got, now):
			t.stall(s)
		}
		t.unlock(s) // as every holder does: a closeAll that met s held drops it here
	}
	return n
}

// closeAll drops every stream (Agent.Close). A stream in use right now
// (a STREAM_END handing it to Config.Streams, whose handler may outlast
// Shutdown's deadline) is not waited for: its holder drops it when it
// lets go (unlock). Waiting for its lock held Shutdown past its deadline
// for as long as the handler ran.
func (t *streams) closeAll() {
	t.mu.Lock()
	t.shut.Store(true)
	all := slices.Collect(maps.Values(t.open))
	t.mu.Unlock()
	for _, s := range all {
		if s.mu.TryLock() {
			t.drop(s)
			s.mu.Unlock()
		}
	}
}

// unlock lets go of s, whose lock its caller holds. Once closeAll ran,
// it drops s, its spool file removed, whatever the outcome (a retryable
// one keeps the stream otherwise): closeAll skipped it if it was held.
// The lock is let go first and taken again, so that a closeAll whose
// TryLock failed before shut was seen here is still covered.
func (t *streams) unlock(s *inStream) {
	s.mu.Unlock()
	if t.shut.Load() && s.mu.TryLock() {
		if !s.closed {
			t.drop(s)
		}
		s.mu.Unlock()
	}
}

// ReclaimStreams drops the streams that have been idle longer than
// StreamLimits.Idle, removing their spool files, and returns how many; the
// spooled streams that fell behind their pace give back what they declared
// but did not receive (StreamLimits.StallGrace). Handle also does it now
// and then.
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
		return noReply, nil, a.streamStart(ctx, sender, b, now, t)
	case amp.TypeStreamData:
		b, err := amp.DecodeStreamData(m.Body)
		if err != nil {
			return 0, nil, err
		}
		return noReply, nil, a.streamData(ctx, sender, b, now)
	default:
		b, err := amp.DecodeStreamEnd(m.Body)
		if err != nil {
			return 0, nil, err
		}
		return a.streamEnd(ctx, sender, b, now, t)
	}
}

// streamStart opens a stream of sender, received from the peer of ctx
// (a transport.Peer, or "" when no transport named one), once every check
// passed and its ticket tk is recorded in the ledger (STREAM-13).
func (a *Agent) streamStart(ctx context.Context, sender string, b amp.StreamStartBody, now time.Time, tk *ledger.Ticket) error {
	t, peer := a.streams, admission.PeerOf(ctx)
	// The layout, hash and size checks are the Reassembler's (RFC 001 §6.2).
	if len(b.StreamID) > maxStreamID || len(b.ContentType) > 256 || len(b.Filename) > 1024 {
		return streamRefusal(amp.CodeInvalidMessage, "limit_exceeded", "", "stream_id, content_type or filename is too long")
	}
	bucket := t.principal(sender)
	if err := a.acceptStream(b, bucket == SharedPrincipal); err != nil {
		return err
	}
	if _, err := amp.NewReassembler(b, t.lim.MaxBytes); err != nil {
		return streamRefusal(amp.CodeOf(err), amp.NameOf(err), b.StreamID, "%s", amp.AsError(err).Message)
	}
	if b.TotalChunks > t.lim.MaxChunks {
		return streamRefusal(amp.CodeInvalidMessage, "limit_exceeded", b.StreamID, "a stream has at most %d chunks", t.lim.MaxChunks)
	}
	s := &inStream{key: streamKey{sender, b.StreamID}, bucket: bucket, start: b, last: now, started: now, lastNew: now}
	if s.shared = s.bucket == SharedPrincipal; s.shared {
		s.peer = streamPeer(peer) // the peer share bounds fresh keys: unnamed callers only
	}
	s.slot = slotOf(bucket, s.peer)
	// A stream that no share of its sender could ever hold is refused for
	// good: retrying it would never help.
	switch {
	case b.TotalSize > t.senderCap:
		return streamRefusal(amp.CodeInvalidMessage, "limit_exceeded", b.StreamID, "a stream is at most %d bytes, one sender's share of the stream budget", t.senderCap)
	case s.shared && b.TotalSize > t.sharedCap:
		return streamRefusal(amp.CodeInvalidMessage, "limit_exceeded", b.StreamID, "a stream of a caller the policy does not name is at most %d bytes", t.sharedCap)
	case s.peer != "" && b.TotalSize > t.peerCap:
		return streamRefusal(amp.CodeInvalidMessage, "limit_exceeded", b.StreamID, "a stream of a caller the policy does not name is at most %d bytes, one network's share of the stream budget", t.peerCap)
	}
	s.have = make([]uint64, (b.TotalChunks+63)/64)
	t.mu.Lock()
	switch {
	case t.shut.Load():
		t.mu.Unlock()
		return agentClosed()
	case t.open[s.key] != nil:
		t.mu.Unlock()
		return streamRefusal(amp.CodeInvalidMessage, "stream_exists", b.StreamID, "a stream with this stream_id is already open")
	case t.perSend[s.slot] >= t.lim.PerSender && !(s.shared && t.evict(s.peer, true, now)):
		t.mu.Unlock()
		return streamRefusal(amp.CodeOverloaded, "too_many_streams", b.StreamID, "this sender has %d open streams, the most allowed (callers the policy does not name share them by network); finish one and retry", t.lim.PerSender)
	case s.shared && t.sharedOpen >= t.sharedSlots && !t.evict("", false, now):
		t.mu.Unlock()
		return streamRefusal(amp.CodeOverloaded, "too_many_streams", b.StreamID, "callers the policy does not name hold their part of the open streams; retry later")
	case len(t.open) >= t.lim.MaxStreams && !t.evict("", false, now):
		t.mu.Unlock()
		return streamRefusal(amp.CodeOverloaded, "too_many_streams", b.StreamID, "the agent has too many open streams; retry later")
	}
	if why := t.room(s, b.TotalSize); why != "" {
		t.mu.Unlock()
		return streamRefusal(amp.CodeOverloaded, "stream_budget_exceeded", b.StreamID, "%s", why)
	}
	// Reserved before any memory or disk is used.
	t.open[s.key] = s
	t.perSend[s.slot]++
	if s.shared {
		t.sharedOpen++
	}
	s.mu.Lock()
	t.charge(s, int64(b.TotalSize))
	t.mu.Unlock()
	defer t.unlock(s)
	if b.TotalSize > t.lim.SpoolThreshold {
		// Not extended to total_size ahead of its chunks: a file system
		// without holes (NTFS by default, FAT, exFAT) would hold all of
		// it on disk at once, while a stalled stream is charged only
		// what its file holds (STREAM-14).
		f, name, err := t.spool.create("ampstream-")
		if err != nil {
			a.log.Error("cannot create a stream spool file", "err", err)
			t.drop(s)
			return unavailable()
		}
		s.file, s.fileName, s.spool = f, name, t.spool
	} else {
		s.mem = make([]byte, b.TotalSize)
	}
	return a.recordStart(ctx, s, tk)
}

// recordStart records durably in the ledger that s is opened, the last
// step of STREAM_START; when it cannot, s is dropped (its spool file
// removed) and the refusal is retryable, not recorded. A STREAM_START
// kept only in the ledger's memory cache was forgotten at a restart, or
// once its sender's later messages overflowed its share of the cache:
// replayed within its ttl (24 h by default), it opened the finished
// stream again under its sender's identity and share, and with the
// captured chunks and a captured STREAM_END that had been refused
// (missing_chunks), the application was handed the stream a second time
// (docs/SPEC-DECISIONS.md STREAM-13). Recorded, a replay gets the
// recorded answer (no reply) and opens nothing.
func (a *Agent) recordStart(ctx context.Context, s *inStream, tk *ledger.Ticket) error {
	tk.Reserve(ledger.MinReplyReserve) // its reply is none
	var err error
	a.durable(ctx, func() { err = tk.Running() })
	if err == nil {
		return nil
	}
	a.streams.drop(s)
	if ledger.NoRoom(err) {
		a.log.Warn("stream refused: no room in the idempotency ledger", "name", string(amp.NameOf(err)), "from", s.key.sender)
		return err
	}
	a.log.Error("idempotency ledger unavailable", "err", err)
	return unavailable()
}

// lookup finds the open stream of sender, locked. The stream's lock is
// waited for through wait, without a CPU slot: its holder may be handing
// the stream to the application (streamEnd), and needs a slot back when
// that returns; waiting for the lock while holding a slot would let a
// sender fill every slot with copies aimed at one stream and stop the
// agent. The agent waits away (Agent.away), not counted against the
// sender's share: the holder may be parked itself, to come back within
// that share, which counted waiters would fill; nor keeping the waiter's
// peer active, since the holder is counted already (AGENT-34).
func (t *streams) lookup(sender, id string, wait func(func())) (*inStream, error) {
	t.mu.Lock()
	s := t.open[streamKey{sender, id}]
	t.mu.Unlock()
	if s == nil {
		return nil, streamRefusal(amp.CodeInvalidMessage, "unknown_stream", id, "no open stream has this stream_id (never started, finished, or reclaimed after its timeout)")
	}
	if !s.mu.TryLock() {
		wait(s.mu.Lock)
	}
	if t.shut.Load() {
		// The agent closed while this message waited for the stream: it
		// is handed to no one after Shutdown returned (STREAM-11).
		if !s.closed {
			t.drop(s)
		}
		s.mu.Unlock()
		return nil, agentClosed()
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

func (a *Agent) streamData(ctx context.Context, sender string, d amp.StreamDataBody, now time.Time) error {
	s, err := a.streams.lookup(sender, d.StreamID, func(f func()) { a.away(ctx, f) })
	if err != nil {
		return err
	}
	defer a.streams.unlock(s)
	switch {
	case d.Index >= s.start.TotalChunks:
		return streamRefusal(amp.CodeInvalidMessage, "chunk_out_of_range", d.StreamID, "chunk index is out of range")
	case uint64(len(d.Data)) != s.chunkLen(d.Index):
		return streamRefusal(amp.CodeInvalidMessage, "wrong_chunk_size", d.StreamID, "chunk has the wrong size")
	}
	off := d.Index * s.start.ChunkSize
	if s.have[d.Index/64]&(1<<(d.Index%64)) != 0 {
		// A chunk received again is no progress: it keeps the stream
		// neither from its idle timeout nor from being evicted.
		//
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
	n := uint64(len(d.Data))
	if err := a.streams.resume(s, n, off+n, now); err != nil {
		return err
	}
	s.last = now
	if s.file != nil {
		if _, err := s.file.WriteAt(d.Data, int64(off)); err != nil {
			// Retryable: the chunk is not counted, the stream stays (and
			// is reclaimed when idle), so the sender's retry can land.
			// Its charge stays: the failed write may have extended the
			// file up to the chunk's end.
			a.log.Error("cannot write a stream spool file", "err", err)
			s.ext = max(s.ext, off+n)
			return unavailable()
		}
		s.ext = max(s.ext, off+n)
	} else {
		copy(s.mem[off:], d.Data)
	}
	s.have[d.Index/64] |= 1 << (d.Index % 64)
	s.received++
	s.got += n
	s.lastNew = now
	return nil
}

// resume charges a new chunk of n bytes ending at end for s (s.mu held;
// a failed write keeps the charge: the file may have grown). A stream
// charged its whole size is charged already. One that fell behind
// charges its whole rest again only when, with this chunk, it has caught
// up with its pace counted from its start (never a fresh pace: one tiny
// chunk per grace must not win the whole charge back); otherwise what
// its spool file holds with this chunk (hold: up to the furthest chunk's
// end, STREAM-14) plus a look-ahead (lookAhead); when that does not fit,
// only what its file holds; when not even that fits, the chunk is
// refused retryably and nothing changes.
func (t *streams) resume(s *inStream, n, end uint64, now time.Time) error {
	total, got, hold := s.start.TotalSize, s.got+n, max(s.ext, end)
	if s.charged >= total {
		return nil
	}
	want := total
	if !t.onRate(s, got, now) {
		want = min(total, hold+t.lookAhead())
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, w := range []uint64{want, hold} {
		if w <= s.charged {
			return nil
		}
		if t.room(s, w-s.charged) == "" {
			t.charge(s, int64(w-s.charged))
			return nil
		}
	}
	return streamRefusal(amp.CodeOverloaded, "stream_budget_exceeded", s.start.StreamID, "%s", t.room(s, hold-s.charged))
}

// streamEnd hands a complete, verified stream to the application. The
// stream is dropped once its outcome is final: accepted, a hash mismatch,
// a refusal for good. A retryable failure (reading the spool file, no
// room for waiting params or in the ledger, or a retryable *amp.Error of
// the application) keeps it, so that the sender's retry can succeed; it
// is reclaimed when idle otherwise. Before the hand-over, as before a
// handler runs, the ledger records durably that it happens and reserves
// the room of its reply (docs/CLI.md §3.4, "Room before the run"): when
// it cannot, the STREAM_END is refused retryably (3005, 5004) and nothing
// was handed over, so the retry with the same id is evaluated again. After
// it, the reply (the ACK, or the application's refusal) is recorded, so a
// replay gets the same bytes for the message's ttl however busy the
// ledger's volatile cache is.
func (a *Agent) streamEnd(ctx context.Context, sender string, e amp.StreamEndBody, now time.Time, t *ledger.Ticket) (amp.Type, []byte, error) {
	s, err := a.streams.lookup(sender, e.StreamID, func(f func()) { a.away(ctx, f) })
	if err != nil {
		return 0, nil, err
	}
	defer a.streams.unlock(s)
	if s.received != s.start.TotalChunks {
		// The stream stays open until its timeout: the sender may send
		// the missing chunks and a new STREAM_END (STREAM-3). This END
		// is no progress: it does not keep the stream from its timeout.
		return 0, nil, streamRefusal(amp.CodeInvalidMessage, "missing_chunks", e.StreamID, "%d of %d chunks are missing", s.start.TotalChunks-s.received, s.start.TotalChunks)
	}
	var content io.ReadSeeker = bytes.NewReader(s.mem)
	if s.file != nil {
		content = io.NewSectionReader(s.file, 0, int64(s.start.TotalSize))
	}
	// Hashed once: a STREAM_END refused retryably keeps the stream, and
	// each one sent again hashed all of it again (threat: a 64 MiB
	// stream whose STREAM_END the params' budget refuses cost 67 ms of
	// CPU per STREAM_END of some 300 bytes, any number of times).
	if s.sum == nil {
		h := sha256.New()
		if _, err := io.Copy(h, content); err != nil {
			a.log.Error("cannot read a stream spool file", "err", err)
			return 0, nil, unavailable()
		}
		s.sum = h.Sum(nil)
	}
	sum := bytes.Clone(s.sum) // handed on (StreamInfo.SHA256): s.sum stays as computed
	if subtle.ConstantTimeCompare(sum, e.Hash) != 1 {
		a.streams.drop(s)
		return 0, nil, streamRefusal(amp.CodeInvalidMessage, "hash_mismatch", e.StreamID, "the stream's SHA-256 does not match its STREAM_END hash; the transfer is rejected")
	}
	if _, err := content.Seek(0, io.SeekStart); err != nil {
		return 0, nil, unavailable()
	}
	s.last = now
	info := StreamInfo{Sender: sender, StreamID: s.start.StreamID, ContentType: s.start.ContentType, Filename: s.start.Filename,
		Size: s.start.TotalSize, Chunks: s.start.TotalChunks, SHA256: sum}
	// Every retryable check before the side effect: the room for waiting
	// params, then the ledger's record and reservation.
	kept, err := a.reserveParams(ctx, info, now)
	if err != nil {
		return 0, nil, err
	}
	var rerr error
	a.durable(ctx, func() { rerr = t.Running() })
	if rerr != nil {
		a.params.cancel(kept)
		if ledger.NoRoom(rerr) {
			a.log.Warn("stream refused: no room in the idempotency ledger", "name", string(amp.NameOf(rerr)), "from", sender)
			return 0, nil, rerr
		}
		a.log.Error("idempotency ledger unavailable", "err", rerr)
		return 0, nil, unavailable()
	}
	var herr error
	a.idle(ctx, func() { herr = a.deliverStream(ctx, info, kept, io.LimitReader(content, int64(s.start.TotalSize))) })
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
	n, ok := s.start.TotalChunks, true
	body, err := amp.Marshal(amp.AckBody{AckSource: amp.AckFromRecipient, ReceivedAt: uint64(now.UnixMilli()),
		StreamID: s.start.StreamID, ChunksReceived: &n, Verified: &ok})
	if err != nil {
		return 0, nil, amp.Wrap(amp.CodeInternalError, err, "cannot encode the ack")
	}
	return amp.TypeAck, body, nil
}

package ampstcp

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ampbundle/ampbundle/admission"
	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/internal/limit"
	"github.com/ampbundle/ampbundle/internal/workers"
	"github.com/ampbundle/ampbundle/transport"
)

// Handler answers one AMP message with the reply to send back (nil for
// none). An error means the bytes could not be attributed to a sender, so
// no signed reply can be addressed: it travels as an ERROR frame. An
// *agent.Agent is a Handler.
type Handler interface {
	Handle(ctx context.Context, msg []byte) ([]byte, error)
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, msg []byte) ([]byte, error)

// Handle calls f.
func (f HandlerFunc) Handle(ctx context.Context, msg []byte) ([]byte, error) { return f(ctx, msg) }

// ServerOptions are the limits of a Server. The zero value of a field means
// its default.
type ServerOptions struct {
	// MaxMessageSize caps one AMP message (default 16 MiB, at least 1 MiB).
	MaxMessageSize int
	// MaxConns caps open connections (default 256). One more is answered
	// with an ERROR frame (5004 overloaded, retryable) and closed.
	MaxConns int
	// MaxPeerConns caps the open connections of one peer (an IP address,
	// an IPv6 /48: admission.Network of transport.Peer, since one host with
	// a /48 has 65,536 /64s; docs/SPEC-DECISIONS.md TRANSPORT-14), default
	// a quarter of MaxConns, at least 1, at most MaxConns: one more is
	// answered like one over MaxConns, so that one host cannot take every
	// connection.
	MaxPeerConns int
	// MaxInFlight caps the messages being handled per connection (default
	// 64); MaxInFlightTotal caps them for the whole server (default 512).
	// Beyond either, the connection is not read until one finishes (the
	// peer's writes block: nothing is refused or lost).
	MaxInFlight      int
	MaxInFlightTotal int
	// MaxPeerInFlight caps the messages being handled for one peer (an
	// IP address, an IPv6 /48: admission.Network of transport.Peer, as
	// for MaxPeerConns, since one host with a /48 has 65,536 /64s), all
	// its connections together (default a quarter of MaxInFlightTotal, at
	// least 1, at most MaxInFlightTotal): beyond it, its connections are
	// not read until one finishes, so that one host cannot hold every
	// server-wide slot.
	MaxPeerInFlight int
	// MaxInFlightBytes caps the bytes of the messages in flight, all
	// connections together (default DefaultMaxInFlightBytes, 64 MiB like the
	// HTTP binding; at least MaxMessageSize). MaxConnInFlightBytes caps them
	// per connection (default a quarter of MaxInFlightBytes, at least
	// MaxMessageSize, at most MaxInFlightBytes). A message is charged its
	// frame's declared size to its connection and its peer
	// (MaxPeerInFlightBytes) as soon as the frame header is read and before
	// any payload byte is held, and to the server as its bytes arrive: a
	// frame of at most 64 KiB whole, a larger one 64 KiB at a time before
	// each chunk is read, so that frames trickled slowly hold of the
	// server's budget only what they sent (docs/TRANSPORT.md §4). Small
	// frames never wait behind a large one; large frames still arriving, the
	// oldest left out, hold at most MaxInFlightBytes less MaxMessageSize and
	// an eighth; the oldest may grow whenever the whole cap has room (so
	// they cannot deadlock). The charge is held until the message is
	// handled; then its reply is charged its own size until it is written. A
	// frame that does not fit waits and the connection is not read meanwhile
	// (back-pressure, like the counts above); the wait does not count
	// against its minimum data rate. A large frame's chunks are joined into
	// one payload once all have arrived, and the copy is charged without
	// waiting while both are held (waiting there could deadlock connections
	// that each hold chunks), so for that moment the server's count, and its
	// memory, may exceed the cap by the frames being joined: at most the cap
	// again, since their chunks were within it.
	MaxInFlightBytes     int64
	MaxConnInFlightBytes int64
	// MaxPeerInFlightBytes caps them per peer: all the connections from
	// one IP address (an IPv6 /64; transport.Peer) together (default a
	// quarter of MaxInFlightBytes, at least MaxMessageSize, at most
	// MaxInFlightBytes), so that one host cannot take the whole budget
	// by opening connections.
	MaxPeerInFlightBytes int64
	// MinDataRate is the slowest a message frame may arrive once its
	// header is read, in bytes per second (default admission.MinDataRate,
	// 128 KiB/s), the HTTP binding's rule (transport.RateReader): its
	// declared size is charged to its peer at once, so after admission.FrameGrace
	// (5 s) what has arrived must keep up with MinDataRate on average,
	// and no more than that grace may pass without a byte, or the
	// connection is closed and the charge given back; reading gets at
	// most FrameTimeout (waits for the server's budget left out), and
	// the whole frame, those waits included, transport.Lifetime of it.
	// Reply frames are written under the same rule, the peer now reading
	// (transport.RateWriter): a peer that takes its reply frames slower
	// than MinDataRate after the grace (counted across the frames it
	// has waiting, not afresh for each), or stalls, has its connection
	// closed and every queued reply's charge given back.
	MinDataRate int64
	// HandshakeTimeout bounds the wait for the client's HANDSHAKE (5 s).
	HandshakeTimeout time.Duration
	// PeerHandshakeRate bounds the TLS handshakes the server begins for
	// one peer (an IP address, an IPv6 /48, as for MaxPeerConns), in
	// handshakes a second (default 16): each costs the server an ECDHE
	// and a signature before the peer has sent anything it must keep
	// sending, so a peer opening connections and abandoning their
	// handshakes took the server's CPU at its own pace. A token bucket
	// per peer holds MaxPeerConns handshakes (a peer may open its whole
	// share at once) and refills at this rate; a TLS connection beyond
	// it is refused like one over MaxPeerConns (closed below TLS before
	// any handshake: retryable, a client sees its handshake fail, 2002)
	// and the refusal is logged. Plain connections do not count
	// (docs/SPEC-DECISIONS.md TRANSPORT-40).
	PeerHandshakeRate int
	// IdleTimeout closes a connection with no frame and nothing in flight
	// for that long (120 s).
	IdleTimeout time.Duration
	// FrameTimeout bounds the arrival of a frame once its first byte came
	// (30 s), and, doubled (transport.Lifetime), its whole life, waits
	// for the server's budget included.
	FrameTimeout time.Duration
	// WriteTimeout bounds the write of one frame (30 s), within which it
	// must also keep MinDataRate.
	WriteTimeout time.Duration
	// DrainTimeout bounds a connection after GOAWAY (30 s): the peer
	// should finish and close it; then it is closed.
	DrainTimeout time.Duration
	// Logger; nil discards.
	Logger *slog.Logger
	// frameGrace replaces admission.FrameGrace (tests).
	frameGrace time.Duration
	// answerLinger replaces transport.AnswerLinger (tests).
	answerLinger time.Duration
	// now replaces time.Now for the handshake buckets (tests).
	now func() time.Time
}

func (o ServerOptions) withDefaults() ServerOptions {
	limit.Default(&o.MaxMessageSize, amp.DefaultMaxMessageSize)
	o.MaxMessageSize = max(o.MaxMessageSize, MinMessageSize)
	limit.Default(&o.MaxConns, 256)
	limit.Default(&o.MaxPeerConns, o.MaxConns/4)
	o.MaxPeerConns = min(max(o.MaxPeerConns, 1), o.MaxConns)
	limit.Default(&o.MaxInFlight, 64)
	limit.Default(&o.MaxInFlightTotal, 512)
	limit.Default(&o.MaxPeerInFlight, o.MaxInFlightTotal/4)
	o.MaxPeerInFlight = min(max(o.MaxPeerInFlight, 1), o.MaxInFlightTotal)
	limit.Default(&o.MaxInFlightBytes, DefaultMaxInFlightBytes)
	o.MaxInFlightBytes = max(o.MaxInFlightBytes, int64(o.MaxMessageSize))
	limit.Default(&o.MaxConnInFlightBytes, o.MaxInFlightBytes/4)
	o.MaxConnInFlightBytes = min(max(o.MaxConnInFlightBytes, int64(o.MaxMessageSize)), o.MaxInFlightBytes)
	limit.Default(&o.MaxPeerInFlightBytes, o.MaxInFlightBytes/4)
	o.MaxPeerInFlightBytes = min(max(o.MaxPeerInFlightBytes, int64(o.MaxMessageSize)), o.MaxInFlightBytes)
	limit.Default(&o.MinDataRate, admission.MinDataRate)
	limit.Default(&o.HandshakeTimeout, 5*time.Second)
	limit.Default(&o.PeerHandshakeRate, 16)
	if o.now == nil {
		o.now = time.Now
	}
	limit.Default(&o.IdleTimeout, 120*time.Second)
	limit.Default(&o.FrameTimeout, 30*time.Second)
	limit.Default(&o.WriteTimeout, 30*time.Second)
	limit.Default(&o.DrainTimeout, 30*time.Second)
	limit.Default(&o.answerLinger, transport.AnswerLinger)
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// DefaultMaxInFlightBytes is the default cap on the message bytes a Server
// holds at once (the HTTP binding's default).
const DefaultMaxInFlightBytes = 64 << 20

// ErrServerClosed is returned by Serve after Shutdown or Close.
var ErrServerClosed = errors.New("ampstcp: server closed")

// Server serves a Handler on the AMPS/TCP binding. Serve it on a
// net.Listener, or on a tls.Listener for amps://.
type Server struct {
	h        Handler
	opts     ServerOptions
	inflight chan struct{} // server-wide slots
	// lingering counts the refused connections closing gracefully
	// (refuse), by peer.
	lingering lingerSlots
	// handshakes are the TLS handshakes each site may begin
	// (PeerHandshakeRate); s.mu guards them.
	handshakes handshakeBuckets
	bytes      *serverBudget // server-wide bytes in flight
	// workers handle the messages: at most as many as are in flight
	// (MaxInFlightTotal), reused, so their stacks have grown to what
	// verifying and signing need.
	workers *workers.Pool
	// jobs reuses the messages handed to the workers (*job): a message
	// costs no closure of its own.
	jobs sync.Pool

	mu        sync.Mutex
	listeners map[net.Listener]struct{}
	conns     map[*serverConn]struct{}
	peers     map[string]*peerShare // by transport.Peer
	sites     map[string]*siteShare // by admission.Network
	closing   bool
	wg        sync.WaitGroup
}

// NewServer returns a Server for h.
func NewServer(h Handler, opts ServerOptions) *Server {
	opts = opts.withDefaults()
	return &Server{h: h, opts: opts, inflight: make(chan struct{}, opts.MaxInFlightTotal),
		lingering:  lingerSlots{peers: map[string]int{}},
		handshakes: handshakeBuckets{rate: float64(opts.PeerHandshakeRate), burst: float64(opts.MaxPeerConns), sites: map[string]handshakeBucket{}},
		bytes:      newServerBudget(opts.MaxInFlightBytes, int64(opts.MaxMessageSize)),
		workers:    workers.New(0),
		listeners:  map[net.Listener]struct{}{}, conns: map[*serverConn]struct{}{}, peers: map[string]*peerShare{},
		sites: map[string]*siteShare{}}
}

// peerShare is the in-flight byte budget of one peer (key, its
// transport.Peer) and the message slots of its site, shared by its
// connections (conns: how many hold it).
type peerShare struct {
	key   string
	bytes *budget
	slots chan struct{} // its site's (siteShare)
	conns int
}

// siteShare is what one site (admission.Network of a transport.Peer: an
// IPv4 address, an IPv6 /48) holds: its open connections (MaxPeerConns)
// and its message slots (MaxPeerInFlight), since one host with a /48 has
// 65,536 /64s (threat: four /64s of one /48, a quarter of the slots each,
// held every server-wide slot; docs/SPEC-DECISIONS.md TRANSPORT-14).
type siteShare struct {
	conns int
	slots chan struct{}
}

// siteConns is how many connections the site of the peer key (a
// transport.Peer) has open. s.mu is held.
func (s *Server) siteConns(key string) int {
	if st := s.sites[admission.Network(key)]; st != nil {
		return st.conns
	}
	return 0
}

// peerOf returns the share of the peer key (a transport.Peer), counting
// one more connection, of the peer and of its site (s.sites). s.mu is
// held.
func (s *Server) peerOf(key string) *peerShare {
	site := admission.Network(key)
	st := s.sites[site]
	if st == nil {
		st = &siteShare{slots: make(chan struct{}, s.opts.MaxPeerInFlight)}
		s.sites[site] = st
	}
	st.conns++
	p := s.peers[key]
	if p == nil {
		p = &peerShare{key: key, bytes: newBudget(s.opts.MaxPeerInFlightBytes), slots: st.slots}
		s.peers[key] = p
	}
	p.conns++
	return p
}

// leavePeer counts one connection of p's peer, and of its site, less.
// s.mu is held.
func (s *Server) leavePeer(p *peerShare) {
	site := admission.Network(p.key)
	if st := s.sites[site]; st.conns <= 1 {
		delete(s.sites, site)
	} else {
		st.conns--
	}
	if p.conns--; p.conns == 0 {
		delete(s.peers, p.key)
	}
}

// InFlightBytes is the message bytes the server holds now, all
// connections together (at most MaxInFlightBytes, plus what replies larger
// than their requests add): of a frame still arriving, the bytes received
// and the chunk being read, not its declared size.
func (s *Server) InFlightBytes() int64 { return s.bytes.inUse() }

// Serve accepts connections on ln until Shutdown or Close (ErrServerClosed)
// or an accept error.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return ErrServerClosed
	}
	s.listeners[ln] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.listeners, ln)
		s.mu.Unlock()
	}()
	var delay time.Duration
	for {
		c, err := ln.Accept()
		if err != nil {
			s.mu.Lock()
			closing := s.closing
			s.mu.Unlock()
			if closing {
				return ErrServerClosed
			}
			if temporaryAccept(err) {
				// Back off like net/http.
				if delay == 0 {
					delay = 5 * time.Millisecond
				} else if delay *= 2; delay > time.Second {
					delay = time.Second
				}
				time.Sleep(delay)
				continue
			}
			return err
		}
		delay = 0
		s.mu.Lock()
		if s.closing {
			s.mu.Unlock()
			c.Close()
			return ErrServerClosed
		}
		key := transport.Peer(c.RemoteAddr().String())
		if len(s.conns) >= s.opts.MaxConns {
			s.refuseAsync(c, key, amp.NewError(amp.CodeOverloaded, "too many connections; retry later"))
			s.mu.Unlock()
			s.opts.Logger.Warn("tcp connection refused: too many connections", "remote", c.RemoteAddr().String())
			continue
		}
		if s.siteConns(key) >= s.opts.MaxPeerConns {
			s.refuseAsync(c, key, amp.NewError(amp.CodeOverloaded, "too many connections from this address; retry later"))
			s.mu.Unlock()
			s.opts.Logger.Warn("tcp connection refused: too many connections from the peer", "peer", key)
			continue
		}
		if _, ok := c.(*tls.Conn); ok && !s.handshakes.take(admission.Network(key), s.opts.now()) {
			// Closed below TLS before its handshake (refuse): the
			// refusal costs no ECDHE nor signature.
			s.refuseAsync(c, key, amp.NewError(amp.CodeOverloaded, "too many tls handshakes from this address; retry later"))
			s.mu.Unlock()
			s.opts.Logger.Warn("tcp connection refused: too many tls handshakes from the peer", "peer", key)
			continue
		}
		sc := newServerConn(s, c, key)
		sc.share = s.peerOf(key)
		s.conns[sc] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go sc.serve()
	}
}

// refuseAsync refuses c, from the peer key (transport.Peer), in a
// goroutine that Shutdown waits for (as it waits for the connections it
// serves): a refusal still lingering is not cut by the process exiting.
// Called with s.mu held and s.closing false, so that the goroutine is
// counted before Shutdown waits.
func (s *Server) refuseAsync(c net.Conn, key string, err error) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.refuse(c, key, err)
	}()
}

// maxLingering bounds the refused connections closed gracefully at once
// (refuse): beyond it, one is closed at once, so that peers opening
// connections in a loop cannot hold more than this many file descriptors
// beyond MaxConns. maxPeerLingering bounds those of one peer
// (transport.Peer, an IPv6 one by its /48: lingerSlots), a quarter of
// them: a peer opening refused connections in a loop and keeping them
// open has its own closed at once beyond its share, and cannot take every
// slot, which would turn every other peer's refusal into a reset instead
// of its retryable ERROR frame.
const (
	maxLingering     = 64
	maxPeerLingering = maxLingering / 4
)

// lingerSlots counts the refused connections closing gracefully
// (refuse): at most maxLingering, at most maxPeerLingering of them from
// one peer, an IPv6 peer counted by its /48 (admission.Network, as the
// agent's slots count it: one host with a /48 has 65,536 /64s, and four
// of them took every slot with refused HANDSHAKEs a few bytes each;
// docs/SPEC-DECISIONS.md TRANSPORT-14). It holds an entry per peer with
// one lingering, so at most maxLingering.
type lingerSlots struct {
	mu    sync.Mutex
	total int
	peers map[string]int // by admission.Network
}

// take takes a slot for the peer key (a transport.Peer); false, with
// none taken, when the peer has its share or every slot is taken.
func (l *lingerSlots) take(key string) bool {
	key = admission.Network(key)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.total >= maxLingering || l.peers[key] >= maxPeerLingering {
		return false
	}
	l.total++
	l.peers[key]++
	return true
}

// give gives back a slot take took for the peer key.
func (l *lingerSlots) give(key string) {
	key = admission.Network(key)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.total--
	if l.peers[key]--; l.peers[key] <= 0 {
		delete(l.peers, key)
	}
}

// maxHandshakeSites bounds the sites handshakeBuckets keeps a bucket
// for: when a new site finds the table at the bound, the buckets that
// are full again (their sites began no handshake within the time a
// bucket takes to refill, MaxPeerConns / PeerHandshakeRate: 16 s with
// ampagent's defaults) are forgotten to make room; with none full, the
// new site's TLS connection is refused (fail closed), as one over
// MaxConns is (docs/SPEC-DECISIONS.md TRANSPORT-40).
const maxHandshakeSites = 4096

// handshakeBuckets are the token buckets of the TLS handshakes each site
// (admission.Network of a transport.Peer) may begin: burst at most,
// refilled at rate a second (ServerOptions.PeerHandshakeRate; threat: a
// peer opening TLS connections and abandoning their handshakes made the
// server run an ECDHE and a signature for each, at the peer's pace,
// docs/SPEC-DECISIONS.md TRANSPORT-40). The server's lock guards them.
type handshakeBuckets struct {
	rate, burst float64
	sites       map[string]handshakeBucket
}

// handshakeBucket is one site's handshakes left at a time.
type handshakeBucket struct {
	tokens float64
	at     time.Time
}

// take takes a handshake for site at now; false, with none taken, when
// the site has none left (or no bucket can be kept for it). A clock that
// steps back refills nothing.
func (b *handshakeBuckets) take(site string, now time.Time) bool {
	k, ok := b.sites[site]
	if !ok {
		if len(b.sites) >= maxHandshakeSites {
			b.forgetFull(now)
		}
		if len(b.sites) >= maxHandshakeSites {
			return false
		}
		k = handshakeBucket{tokens: b.burst, at: now}
	}
	if d := now.Sub(k.at); d > 0 {
		k.tokens = min(b.burst, k.tokens+b.rate*d.Seconds())
		k.at = now
	}
	if k.tokens < 1 {
		b.sites[site] = k
		return false
	}
	k.tokens--
	b.sites[site] = k
	return true
}

// forgetFull forgets the buckets full again at now: a site without one
// starts full.
func (b *handshakeBuckets) forgetFull(now time.Time) {
	for site, k := range b.sites {
		if d := now.Sub(k.at); d > 0 && k.tokens+b.rate*d.Seconds() >= b.burst {
			delete(b.sites, site)
		}
	}
}

// refuse writes one connection-level ERROR frame on c, from the peer key
// (transport.Peer), and closes it without losing the frame to a reset
// while the peer still sends (transport.CloseAfterAnswer: at most
// transport.AnswerLinger, and at most maxLingering connections at once,
// maxPeerLingering of them from one peer; past that c is closed at
// once).
// On a TLS connection whose TLS handshake is not done, nothing is written:
// the frame would first need that handshake, which waits for the peer, so
// that a peer sending nothing would keep every refused connection open;
// the connection is closed at once below TLS.
func (s *Server) refuse(c net.Conn, key string, err error) {
	if tc, ok := c.(*tls.Conn); ok && !tc.ConnectionState().HandshakeComplete {
		tc.NetConn().Close()
		return
	}
	c.SetWriteDeadline(time.Now().Add(s.opts.WriteTimeout))
	if _, werr := c.Write(AppendFrame(nil, FrameError, EncodeErrorFrame(err, nil))); werr != nil {
		c.Close()
		return
	}
	s.closeAnswered(c, key)
}

// closeAnswered closes c, from the peer key, on which a refusal (an
// ERROR frame, a HANDSHAKE that refuses) was just written, without
// losing it to a reset while the peer still sends
// (transport.CloseAfterAnswer), within the linger shares (refuse); past
// them, at once.
func (s *Server) closeAnswered(c net.Conn, key string) {
	if !s.lingering.take(key) {
		c.Close()
		return
	}
	transport.CloseAfterAnswer(c, s.opts.answerLinger, transport.AnswerDrain)
	s.lingering.give(key)
}

// temporaryAccept reports whether an Accept error passes (a timeout, or
// out of file descriptors or buffers, or a connection reset before it was
// accepted): the server backs off and goes on, as net/http does, instead
// of stopping.
func temporaryAccept(err error) bool {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	for _, e := range []error{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM, syscall.ECONNABORTED, syscall.ECONNRESET} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// Shutdown stops accepting, sends GOAWAY on every connection and waits
// until each is drained (the peer closed it, nothing in flight) or ctx
// ends, then closes what remains. Messages that arrive on a connection
// after its GOAWAY are still handled: nothing the peer sent is lost.
func (s *Server) Shutdown(ctx context.Context) error {
	s.stop((*serverConn).goAway)
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
		s.workers.Close()
		return nil
	case <-ctx.Done():
		s.Close()
		<-done
		return ctx.Err()
	}
}

// Close closes every listener and connection at once (a TLS connection
// below TLS, without its close_notify: serverConn.kill).
func (s *Server) Close() error {
	s.workers.Close()
	s.stop((*serverConn).kill)
	return nil
}

// stop marks the server closing, closes its listeners and ends each
// connection with end (GOAWAY, or at once).
func (s *Server) stop(end func(*serverConn)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closing = true
	for ln := range s.listeners {
		ln.Close()
	}
	for c := range s.conns {
		end(c)
	}
}

// serverConn is one accepted connection.
type serverConn struct {
	s      *Server
	conn   net.Conn
	log    *slog.Logger
	ctx    context.Context
	cancel context.CancelFunc
	out    chan outFrame // frames to write
	// goawayq is closed when the server sends GOAWAY (sendGoAway): the
	// writer writes the frame, so that whoever sends it never waits
	// behind the replies queued for a peer that does not read.
	goawayq chan struct{}
	done    chan struct{} // closed when the connection ends
	stop    chan struct{} // closed when the connection is being torn down
	slots   chan struct{} // per-connection in-flight slots
	bytes   *budget       // per-connection bytes in flight
	share   *peerShare    // its peer's share of the bytes (set by Serve)
	peer    int           // the peer's max_msg_size
	active  sync.WaitGroup

	inflight atomic.Int64
	goaway   atomic.Bool
	goOnce   sync.Once
	stopOnce sync.Once
	ready    atomic.Bool // handshake done

	// The watch of the connection while the read loop waits (watch).
	wmu      sync.Mutex
	rdl      time.Time     // the read deadline last set (setReadDeadline)
	watching chan struct{} // while a watcher runs; closed when it returns
	halt     chan struct{} // closed by unwatch, for a watcher that polls
	halting  bool          // unwatch interrupts the watcher
	abuf     []byte        // lookahead bytes, allocated at the first watch
	ahead    []byte        // what the watcher read ahead (of abuf), for Read
	aheadErr error         // the error the watcher met, for Read after ahead
}

// newServerConn serves c, from the peer key (transport.Peer): the
// context of its messages names it (admission.WithPeer), so that the
// handler's admission (the agent's admission.Fair) counts them by peer.
func newServerConn(s *Server, c net.Conn, key string) *serverConn {
	ctx, cancel := context.WithCancel(admission.WithPeer(context.Background(), key))
	return &serverConn{s: s, conn: c, ctx: ctx, cancel: cancel,
		log:     s.opts.Logger.With("remote", c.RemoteAddr().String()),
		out:     make(chan outFrame, s.opts.MaxInFlight+4),
		goawayq: make(chan struct{}),
		done:    make(chan struct{}),
		stop:    make(chan struct{}),
		slots:   make(chan struct{}, s.opts.MaxInFlight),
		bytes:   newBudget(s.opts.MaxConnInFlightBytes)}
}

// outFrame is a frame to write (its type and payload, written without
// being copied into one buffer first) and the in-flight bytes it releases
// once written (or dropped).
type outFrame struct {
	typ     byte
	payload []byte
	charge  int64
}

// writeTo writes the frame to bw.
func (f outFrame) writeTo(bw *bufio.Writer) error {
	var hdr [frameHeader]byte
	binary.BigEndian.PutUint32(hdr[:4], uint32(len(f.payload)+1))
	hdr[4] = f.typ
	if _, err := bw.Write(hdr[:]); err != nil {
		return err
	}
	_, err := bw.Write(f.payload)
	return err
}

// shut closes the connection, ends the context of its messages (no reply
// can reach the peer any more: what still waits for a slot, a first copy
// or a ledger claim gives up, unrun) and wakes a read loop waiting for
// in-flight bytes.
func (c *serverConn) shut() {
	c.cancel()
	c.stopOnce.Do(func() { close(c.stop) })
	c.conn.Close()
}

// kill is shut at once, for Server.Close, which ends every connection
// in turn under the server's lock: a TLS connection is closed below TLS
// first, so that tls.Conn.Close does not write a close_notify alert
// under TLS's own 5 s write deadline, which a peer that reads nothing
// (its buffers full, no write of the writer's in progress) would hold
// (threat: 5 s of Close per such connection, one after another).
func (c *serverConn) kill() {
	if tc, ok := c.conn.(interface{ NetConn() net.Conn }); ok {
		tc.NetConn().Close()
	}
	c.shut()
}

// Read reads the connection for the read loop (serve's bufio.Reader):
// first what the watcher read ahead while the loop waited (watch), then
// the connection. A read error that means the peer is gone (peerGone)
// ends the context of its messages at once, before the messages in
// flight have returned (those already claimed by the agent run on,
// detached, by design).
func (c *serverConn) Read(p []byte) (int, error) {
	c.wmu.Lock()
	if len(c.ahead) > 0 {
		n := copy(p, c.ahead)
		c.ahead = c.ahead[n:]
		if len(c.ahead) == 0 {
			c.ahead = c.abuf[:0]
		}
		c.wmu.Unlock()
		return n, nil
	}
	if err := c.aheadErr; err != nil {
		c.aheadErr = nil
		c.wmu.Unlock()
		return 0, err
	}
	c.wmu.Unlock()
	n, err := c.conn.Read(p)
	if peerGone(err) {
		c.cancel()
	}
	return n, err
}

// peerGone reports whether err, from reading the connection, means the
// connection is gone, reset by the peer or closed: nobody can read the
// replies of its messages any more. Neither the end of what the peer
// sends (EOF: a half-close, after which the peer still reads its
// replies, as a client leaving after GOAWAY does) nor one of the
// server's deadlines (isDeadline) is; a keepalive that gave up
// (ETIMEDOUT) is.
func peerGone(err error) bool {
	return err != nil && !errors.Is(err, io.EOF) && !isDeadline(err)
}

// lookahead is the most the watcher reads ahead of the read loop.
const lookahead = 4 << 10

// setReadDeadline sets the connection's read deadline for the read loop;
// while a watcher runs it is kept, and set when the watch ends.
func (c *serverConn) setReadDeadline(t time.Time) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.rdl = t
	if c.watching != nil {
		return nil
	}
	return c.conn.SetReadDeadline(t)
}

// watch starts watching the connection while the read loop waits (for a
// slot in dispatch, for a budget in receive) and so reads nothing: a
// goroutine of its own reads ahead, at most lookahead bytes (kept for
// Read, in order), without a deadline, so that a reset is seen during
// the wait and the connection shut at once (its messages' context ends,
// the wait gives up), not once the backlog has run for nobody. EOF (a
// half-close) and whatever else it reads are kept for the read loop,
// which sees them after the wait as it would have. Once the lookahead
// is full (more of the peer's bytes wait in the socket, before any
// reset), or the peer half-closed (a read after EOF returns EOF again,
// never a reset that follows), it asks the socket for a pending error
// instead, every watchPoll (pollFailed), for as long as the wait lasts:
// a full lookahead or an EOF already read when the wait starts (the
// loop still reads what was buffered before them) starts that poll
// too. unwatch ends it.
func (c *serverConn) watch() {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.watching != nil {
		return
	}
	if c.aheadErr != nil && !errors.Is(c.aheadErr, io.EOF) {
		return // the peer is gone: the connection is shut
	}
	if c.abuf == nil {
		c.abuf = make([]byte, lookahead)
		c.ahead = c.abuf[:0]
	}
	done, halt := make(chan struct{}), make(chan struct{})
	c.watching, c.halt = done, halt
	c.conn.SetReadDeadline(time.Time{})
	go c.watcher(done, halt)
}

// watchPoll is how often a watcher that cannot read (its lookahead full,
// or EOF met), or serve waiting for the messages in flight once the read
// loop returned, asks the socket whether the connection failed.
const watchPoll = 100 * time.Millisecond

// watcher reads ahead for watch until the room is full or it met EOF
// (then it polls), another error, or unwatch interrupts it (with a
// deadline in the past: that timeout is not kept; or, polling, with
// halt).
func (c *serverConn) watcher(done, halt chan struct{}) {
	defer close(done)
	for {
		c.wmu.Lock()
		room := c.ahead[len(c.ahead):cap(c.ahead)]
		eof := errors.Is(c.aheadErr, io.EOF)
		c.wmu.Unlock()
		if len(room) == 0 || eof {
			c.pollFailed(halt)
			return
		}
		n, err := c.conn.Read(room)
		c.wmu.Lock()
		c.ahead = c.ahead[:len(c.ahead)+n]
		if err != nil && !(c.halting && isDeadline(err)) {
			c.aheadErr = err
		}
		c.wmu.Unlock()
		if peerGone(err) {
			c.shut()
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return
		}
	}
}

// pollFailed asks the socket every watchPoll whether the connection
// failed (a reset behind bytes not yet read), and shuts it if so, until
// halt closes.
func (c *serverConn) pollFailed(halt <-chan struct{}) {
	t := time.NewTicker(watchPoll)
	defer t.Stop()
	for {
		select {
		case <-halt:
			return
		case <-t.C:
			if socketFailed(c.conn) {
				c.shut()
				return
			}
		}
	}
}

// unwatch ends the watch, if one runs, before the read loop reads again:
// it interrupts the watcher, waits for it, and sets the read deadline the
// loop last set.
func (c *serverConn) unwatch() {
	c.wmu.Lock()
	done := c.watching
	if done == nil {
		c.wmu.Unlock()
		return
	}
	c.halting = true
	close(c.halt)
	c.conn.SetReadDeadline(time.Unix(1, 0))
	c.wmu.Unlock()
	<-done
	c.wmu.Lock()
	c.watching, c.halting = nil, false
	c.conn.SetReadDeadline(c.rdl)
	c.wmu.Unlock()
}

// watchWait is an expiry for a wait of the read loop with none of its
// own: it starts the watch (called only when the charge has to wait).
func (c *serverConn) watchWait() <-chan time.Time {
	c.watch()
	return nil
}

// receive reads the payload of a MESSAGE frame of size bytes, charging
// it to the connection's and its peer's budgets at its declared size
// before any of it is held (waiting until they fit), and to the server's
// budget as it arrives (serverBudget: a small frame whole, a larger one
// readChunk at a time, before each chunk is read, into a buffer of its
// own, so that what is held is what is charged; the chunks are joined
// once at the end, the copy charged to the server's budget while both
// are held). What is charged must keep coming at the minimum data rate
// and without stalling (transport.RateReader), not counting the time the
// server's budget made it wait; and the whole frame, those waits
// included, gets at most transport.Lifetime(FrameTimeout) from its header
// on. It returns the payload, all three charged size; false, with
// nothing charged, when the connection is torn down or the peer falls
// behind, stalls or goes, or the lifetime ends.
func (c *serverConn) receive(br *bufio.Reader, size int) ([]byte, bool) {
	o := c.s.opts
	end := time.Now().Add(transport.Lifetime(o.FrameTimeout))
	var timer *time.Timer
	expire := func() <-chan time.Time {
		if timer == nil {
			timer = time.NewTimer(time.Until(end))
		}
		return timer.C
	}
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	// While a charge waits, the connection is watched (watch), and the
	// watch ended before it is read again.
	watchExpire := func() <-chan time.Time {
		c.watch()
		return expire()
	}
	n := int64(size)
	ok := c.bytes.acquireBy(n, c.stop, c.watchWait)
	c.unwatch()
	if !ok {
		return nil, false
	}
	ok = c.share.bytes.acquireBy(n, c.stop, c.watchWait)
	c.unwatch()
	if !ok {
		c.bytes.release(n)
		return nil, false
	}
	giveBack := func() {
		c.share.bytes.release(n)
		c.bytes.release(n)
	}
	var rr *transport.RateReader
	reader := func() io.Reader {
		if rr == nil && !c.goaway.Load() && br.Buffered() < size {
			rr = transport.NewRateReader(br, c.setReadDeadline, o.MinDataRate, o.frameGrace, o.FrameTimeout)
			rr.EndBy(end)
		}
		if rr != nil {
			return rr
		}
		return br
	}
	if size <= smallFrame {
		ok := c.s.bytes.acquireSmallBy(n, c.stop, watchExpire)
		c.unwatch()
		if !ok {
			giveBack()
			return nil, false
		}
		payload, err := readPayload(reader(), size)
		if err != nil {
			c.s.bytes.release(n)
			giveBack()
			return nil, false
		}
		return payload, true
	}
	p := c.s.bytes.begin()
	var chunks [][]byte
	got := 0
	for got < size {
		step := min(size-got, readChunk)
		waitFrom := time.Now()
		ok := c.s.bytes.growBy(p, int64(step), c.stop, watchExpire)
		c.unwatch()
		if !ok {
			c.s.bytes.abort(p)
			giveBack()
			return nil, false
		}
		if rr != nil {
			rr.Exclude(time.Since(waitFrom))
		}
		chunk := make([]byte, step)
		if _, err := io.ReadFull(reader(), chunk); err != nil {
			c.s.bytes.abort(p)
			giveBack()
			return nil, false
		}
		chunks = append(chunks, chunk)
		got += step
	}
	c.s.bytes.done(p)
	// The join: charged while the chunks and the copy are both held.
	c.s.bytes.force(n)
	buf := make([]byte, 0, size)
	for i, chunk := range chunks {
		buf = append(buf, chunk...)
		chunks[i] = nil
	}
	c.s.bytes.release(n)
	return buf, true
}

// force charges n in-flight bytes without waiting.
func (c *serverConn) force(n int64) {
	c.bytes.force(n)
	c.share.bytes.force(n)
	c.s.bytes.force(n)
}

// release gives back n in-flight bytes.
func (c *serverConn) release(n int64) {
	c.bytes.release(n)
	c.share.bytes.release(n)
	c.s.bytes.release(n)
}

// goAway marks the connection as going away and, once the handshake is
// done, sends GOAWAY (a connection still in its handshake completes it and
// then gets the GOAWAY, so a client never loses a message to a restart).
func (c *serverConn) goAway() {
	c.goaway.Store(true)
	if c.ready.Load() {
		c.sendGoAway()
	}
}

// sendGoAway sends GOAWAY once and starts the drain timer. It does not
// wait: the writer writes the frame (c.goawayq), since Shutdown calls it
// under the server's lock, and a queue full of replies for a peer that
// reads nothing would hold it there for as long as the peer keeps each
// write within the write timeout (threat: Shutdown past its context,
// Close and every connection's exit waiting on the lock meanwhile).
func (c *serverConn) sendGoAway() {
	c.goOnce.Do(func() {
		close(c.goawayq)
		// The read loop now waits at most DrainTimeout for more frames.
		c.setReadDeadline(time.Now().Add(c.s.opts.DrainTimeout))
		time.AfterFunc(c.s.opts.DrainTimeout, c.shut)
	})
}

// send queues a frame for the writer; it gives up (and releases the
// frame's charge) when the connection ends.
func (c *serverConn) send(f outFrame) {
	select {
	case c.out <- f:
	case <-c.done:
		c.release(f.charge)
	}
}

func (c *serverConn) serve() {
	defer c.s.wg.Done()
	defer func() {
		c.s.mu.Lock()
		delete(c.s.conns, c)
		c.s.leavePeer(c.share)
		c.s.mu.Unlock()
	}()
	br := bufio.NewReaderSize(c, 64<<10)
	if !c.handshake(br) {
		close(c.done)
		c.cancel()
		c.shut()
		return
	}
	writerDone := make(chan struct{})
	go func() { c.writer(); close(writerDone) }()
	c.ready.Store(true)
	if c.goaway.Load() {
		c.sendGoAway()
	}
	err := c.readLoop(br)
	// Let what is in flight finish and be written, then close.
	c.awaitActive()
	if err != nil {
		c.sendErrorAndWait(err)
	}
	close(c.done)
	<-writerDone
	c.cancel()
	if err != nil {
		// Refused with an ERROR frame (a frame over the limit, an
		// unknown type, a second HANDSHAKE) while the peer may still be
		// sending that frame: closed as every refusal is, or the reset
		// would lose the frame.
		c.s.closeAnswered(c.conn, c.share.key)
	}
	c.shut()
}

// awaitActive waits, once the read loop has returned, for the messages in
// flight. Nothing reads the connection meanwhile, and a read would not
// tell anyway: after the peer's half-close (EOF) a read returns EOF
// again, never a reset that follows it. So the socket's pending error is
// polled meanwhile (pollFailed: a reset in CLOSE_WAIT leaves EPIPE
// there), and a failure shuts the connection: the context of its
// messages ends, and the backlog does not run for a peer that is gone.
// Where the platform's socket is not asked (socketFailed), the messages
// run to their end, as they did unwatched.
func (c *serverConn) awaitActive() {
	if c.inflight.Load() == 0 {
		c.active.Wait() // nothing in flight: no dispatch comes after the read loop
		return
	}
	idle := make(chan struct{})
	go func() {
		c.active.Wait()
		close(idle)
	}()
	c.pollFailed(idle)
	<-idle
}

// sendErrorAndWait queues a connection-level ERROR frame.
func (c *serverConn) sendErrorAndWait(err error) {
	select {
	case c.out <- outFrame{typ: FrameError, payload: EncodeErrorFrame(err, nil)}:
	default:
	}
}

func (c *serverConn) handshake(br *bufio.Reader) bool {
	o := c.s.opts
	c.conn.SetReadDeadline(time.Now().Add(o.HandshakeTimeout))
	f, err := ReadFrame(br, MaxControlPayload+1)
	if err != nil {
		if isDeadline(err) {
			c.log.Info("tcp handshake timed out")
		}
		if errors.As(err, new(*amp.Error)) {
			c.s.refuse(c.conn, c.share.key, err)
		}
		return false
	}
	if f.Type != FrameHandshake {
		c.s.refuse(c.conn, c.share.key, amp.Named(amp.CodeInvalidMessage, ErrProtocol, "the first frame must be a HANDSHAKE"))
		return false
	}
	resp := HandshakeResponse{Version: Version, MaxMsgSize: uint64(o.MaxMessageSize)}
	q, err := DecodeHandshakeRequest(f.Payload)
	switch {
	case err != nil:
		eb := amp.ErrorBodyOf(err)
		resp.Error = &eb
	case q.Version != Version:
		eb := amp.ErrorBodyOf(amp.NewError(amp.CodeUnsupportedVersion, "this agent speaks version %d of the tcp binding only", Version))
		resp.Error = &eb
	default:
		resp.Accepted = true
	}
	c.conn.SetWriteDeadline(time.Now().Add(o.WriteTimeout))
	if _, err := c.conn.Write(AppendFrame(nil, FrameHandshake, EncodeHandshakeResponse(resp))); err != nil {
		return false
	}
	if !resp.Accepted {
		// Closed as every refusal is: a client that sent its first
		// messages behind the HANDSHAKE, closed at once, would see a
		// reset (retryable) instead of a refusal that cannot change.
		c.s.closeAnswered(c.conn, c.share.key)
		return false
	}
	c.peer = int(min(q.MaxMsgSize, uint64(amp.DefaultMaxMessageSize*64)))
	return true
}

// writer writes queued frames, flushing when the queue is empty. A frame's
// in-flight bytes are released once it is handed to the connection. The
// frames are written under the minimum data rate (transport.RateWriter,
// the rule frames are read under), counted across the frames the writer
// has waiting: from the first frame it took with nothing left to write
// (every byte flushed, the queue empty), the peer must take them at
// MinDataRate on average after the grace, without stalling, each frame
// whole within WriteTimeout, or the connection is closed and every
// queued reply's charge given back. The time the writer waits for a
// reply is not counted (docs/SPEC-DECISIONS.md TRANSPORT-38).
func (c *serverConn) writer() {
	o := c.s.opts
	rw := transport.NewRateWriter(c.conn, c.conn.SetWriteDeadline, o.MinDataRate, o.frameGrace, o.WriteTimeout)
	bw := bufio.NewWriterSize(rw, 64<<10)
	idle := true // nothing left to write: the next frame starts the clock
	next := func() {
		if idle {
			rw.Reset()
		} else {
			rw.Next()
		}
		idle = false
	}
	goaway := c.goawayq
	for {
		var f outFrame
		select {
		case f = <-c.out:
		case <-goaway:
			goaway = nil // written once
			f = outFrame{typ: FrameGoAway}
		case <-c.done:
			// Write what is left, then stop.
			var err error
			for {
				select {
				case f = <-c.out:
					if err == nil {
						next()
						err = f.writeTo(bw)
					}
					c.release(f.charge)
				default:
					if err == nil && bw.Buffered() > 0 {
						next()
						bw.Flush()
					}
					return
				}
			}
		}
		next()
		err := f.writeTo(bw)
		c.release(f.charge)
		if err == nil && len(c.out) == 0 {
			// Let the handlers that are about to reply queue first, so
			// that one write carries many frames.
			runtime.Gosched()
			if len(c.out) == 0 {
				rw.Next()
				err = bw.Flush()
				// Idle only if no reply came while the flush waited for
				// the peer: a backlog keeps its clock.
				idle = err == nil && len(c.out) == 0
			}
		}
		if err != nil {
			c.shut()
			c.drainQueue()
			return
		}
	}
}

// drainQueue discards queued frames after a write failure, so that senders
// never block, and releases their charges: until the connection ends, and
// then what is left in the queue (done closes once every handler has
// returned, so no charged frame comes after; a select that saw both
// ready could otherwise leave queued replies charged for ever).
func (c *serverConn) drainQueue() {
	for {
		select {
		case f := <-c.out:
			c.release(f.charge)
		case <-c.done:
			for {
				select {
				case f := <-c.out:
					c.release(f.charge)
				default:
					return
				}
			}
		}
	}
}

// readLoop reads frames until the peer closes, a protocol error (returned,
// for an ERROR frame) or a timeout.
func (c *serverConn) readLoop(br *bufio.Reader) error {
	o := c.s.opts
	for {
		// Wait for the first byte of the next frame: idle timeout, unless
		// messages are in flight (the peer is waiting for replies).
		if !c.goaway.Load() {
			c.setReadDeadline(time.Now().Add(o.IdleTimeout))
		}
		if _, err := br.Peek(1); err != nil {
			if isDeadline(err) && c.inflight.Load() > 0 && !c.goaway.Load() {
				continue
			}
			if isDeadline(err) && !c.goaway.Load() {
				c.log.Info("tcp connection idle: closed")
			}
			return nil
		}
		if !c.goaway.Load() {
			c.setReadDeadline(time.Now().Add(o.FrameTimeout))
		}
		typ, size, err := readFrameHeader(br, o.MaxMessageSize+1)
		if err != nil {
			if errors.As(err, new(*amp.Error)) {
				c.log.Info("tcp frame refused", "error", amp.NameOf(err))
				return err
			}
			return nil
		}
		var charge int64
		var payload []byte
		if typ == FrameMessage {
			// Charged before any of it is held; while it does not fit,
			// the connection is not read.
			var ok bool
			if payload, ok = c.receive(br, size); !ok {
				return nil
			}
			charge = int64(size)
		} else if payload, err = readPayload(br, size); err != nil {
			return nil
		}
		f := Frame{Type: typ, Payload: payload}
		switch f.Type {
		case FrameMessage:
			c.dispatch(f.Payload, charge)
		case FramePing:
			c.send(outFrame{typ: FramePong, payload: f.Payload})
		case FramePong:
		case FrameGoAway:
			// The client leaves: it sends no more; replies still go out.
		case FrameError:
			if ef, err := DecodeErrorFrame(f.Payload); err == nil {
				c.log.Info("tcp peer sent an error", "code", uint16(ef.Error.Code))
			}
			return nil
		case FrameHandshake:
			return amp.Named(amp.CodeInvalidMessage, ErrProtocol, "a second HANDSHAKE on the connection")
		}
	}
}

// dispatch hands one message, charged charge in-flight bytes, to the
// handler in its own goroutine once a per-connection, a per-peer and a
// server-wide slot are free. While it waits for one, the connection is
// watched (watch): a reset ends the wait and the context of the
// connection's messages.
func (c *serverConn) dispatch(msg []byte, charge int64) {
	ok := c.takeSlots()
	c.unwatch()
	if !ok {
		c.release(charge)
		return
	}
	c.inflight.Add(1)
	c.active.Add(1)
	j, _ := c.s.jobs.Get().(*job)
	if j == nil {
		j = &job{}
		j.run = j.do
	}
	j.c, j.msg, j.charge = c, msg, charge
	c.s.workers.Go(j.run)
}

// takeSlots takes a per-connection, a per-peer and a server-wide slot,
// in that order, watching the connection if it has to wait; false, with
// none taken, when the connection's context ends first. A connection
// whose context has ended (its peer is gone: the messages still buffered
// from it are answered to nobody) gets none, even where slots are free:
// select picks at random between a free slot and an ended context.
func (c *serverConn) takeSlots() bool {
	if c.ctx.Err() != nil || !c.take(c.slots) {
		return false
	}
	if !c.take(c.share.slots) {
		<-c.slots
		return false
	}
	if !c.take(c.s.inflight) {
		<-c.share.slots
		<-c.slots
		return false
	}
	if c.ctx.Err() != nil {
		<-c.s.inflight
		<-c.share.slots
		<-c.slots
		return false
	}
	return true
}

// take takes a slot of slots, at once or, watching the connection, once
// one is free; false when the connection's context ends first.
func (c *serverConn) take(slots chan struct{}) bool {
	select {
	case slots <- struct{}{}:
		return true
	default:
	}
	c.watch()
	select {
	case slots <- struct{}{}:
		return true
	case <-c.ctx.Done():
		return false
	}
}

// job is one message handed to a worker; run (its do, bound once) is
// what the worker runs. A job goes back to its server's pool once done.
type job struct {
	c      *serverConn
	msg    []byte
	charge int64
	run    func()
}

func (j *job) do() {
	c, msg, charge := j.c, j.msg, j.charge
	*j = job{run: j.run}
	c.s.jobs.Put(j)
	c.handle(msg, charge)
}

// handle runs the handler on msg, charged charge in-flight bytes, and
// queues its reply; it gives back the slots dispatch took.
func (c *serverConn) handle(msg []byte, charge int64) {
	defer func() {
		<-c.s.inflight
		<-c.share.slots
		<-c.slots
		c.inflight.Add(-1)
		c.active.Done()
	}()
	var f outFrame
	reply, err := c.s.h.Handle(c.ctx, msg)
	switch {
	case err != nil:
		id, _, _ := amp.Limits{MaxMessageSize: c.s.opts.MaxMessageSize}.EnvelopeIDs(msg)
		if len(id) != 16 {
			id = nil
		}
		f = outFrame{typ: FrameError, payload: EncodeErrorFrame(err, id)}
	case reply == nil:
	case len(reply) > c.peer:
		c.log.Warn("tcp reply larger than the peer accepts: refused", "size", len(reply), "peer_max", c.peer)
		id, _, _ := amp.Limits{MaxMessageSize: c.s.opts.MaxMessageSize}.EnvelopeIDs(msg)
		f = outFrame{typ: FrameError, payload: EncodeErrorFrame(
			amp.Named(amp.CodeInvalidMessage, ErrFrameTooLarge, "the reply is larger than the max_msg_size of the handshake"), id)}
	default:
		f = outFrame{typ: FrameMessage, payload: reply}
	}
	msg = nil
	if f.typ == 0 {
		c.release(charge)
		return
	}
	// From here the connection holds the reply, not the request: the
	// charge becomes the reply's size until it is written. A peer that
	// does not read its replies so pins only their bytes, not those of
	// the requests that caused them. A reply larger than its request
	// is charged without waiting: the handler's work is done, and what
	// it holds must drain.
	want := int64(len(f.payload))
	switch {
	case want > charge:
		c.force(want - charge)
	case want < charge:
		c.release(charge - want)
	}
	f.charge = want
	c.send(f)
}

package admin

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/ampbundle/ampbundle/admission"
	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/resolver"
)

// Server serves the admin socket of a store (see Serve).
type Server struct {
	path string
	srv  *http.Server
	done chan error
}

// Serve serves the admin socket of store, so that an operator can
// import and remove bundles, change trust and read the registry with
// `ampbundle` while the program that embeds the agent holds the store
// open (a bbolt file has one writer process). It is what `ampagent serve`
// and `ampagent mcp` run: the socket (path, or SocketPath(store.Path())
// when path is empty) is created with mode 0600, only connections from
// the process's own user are served, and every change goes through the
// same resolver.Store methods as offline: verified, atomic and audited.
// The protocol is docs/FORMAT.md's "Admin socket protocol".
//
// It refuses (admin_socket) when another process already answers on the
// socket; a socket file left by a process that is gone is replaced. Unix
// only: elsewhere it fails with admin_socket. Call Close (or Shutdown) to
// stop serving and remove the socket.
func Serve(store *resolver.Store, path string, log *slog.Logger) (*Server, error) {
	if path == "" {
		path = SocketPath(store.Path())
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ln, err := Listen(path)
	if err != nil {
		return nil, err
	}
	lim := &connLimit{Listener: ln}
	s := &Server{
		path: path,
		srv: &http.Server{Handler: NewHandler(store, log), ConnContext: ConnContext, ConnState: lim.state,
			ReadHeaderTimeout: readHeaderTimeout, IdleTimeout: idleTimeout},
		done: make(chan error, 1),
	}
	go func() {
		err := s.srv.Serve(lim)
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		s.done <- err
	}()
	return s, nil
}

// Path is the socket's path.
func (s *Server) Path() string { return s.path }

// Done delivers the error that stopped the server (nil after Close or
// Shutdown), once.
func (s *Server) Done() <-chan error { return s.done }

// Shutdown stops accepting connections, waits (up to ctx) for requests in
// progress (an import finishes or rolls back), and removes the socket.
func (s *Server) Shutdown(ctx context.Context) error {
	err := s.srv.Shutdown(ctx)
	os.Remove(s.path)
	return err
}

// Close stops the server at once and removes the socket.
func (s *Server) Close() error {
	err := s.srv.Close()
	os.Remove(s.path)
	return err
}

// readHeaderTimeout and idleTimeout are the admin socket's bounds on
// reading a request's head and on waiting for the next request of a
// connection (http.Server); betweenWrites bounds what net/http writes
// itself between two requests (a malformed head's 400: connLimit.state),
// which no answer's rate bounds (rateAnswer).
const (
	readHeaderTimeout = 5 * time.Second
	idleTimeout       = time.Minute
	betweenWrites     = idleTimeout + readHeaderTimeout + admission.FrameGrace
)

// MaxConns bounds the admin socket's connections served at once. Its
// callers are the agent's own user (an operator's commands, a script),
// each needing one or two; a connection costs the agent a descriptor (one
// its AMP listener needs too) and a goroutine, and every request body is
// read at the minimum data rate (rateBodies), so a few dozen serve every
// caller and bound what a runaway one holds.
const MaxConns = 32

// busyAnswer is the answer to a connection beyond MaxConns: 503, the
// error document of the socket with code busy (AMP 5004), and the
// connection closed.
var busyAnswer = func() []byte {
	var doc errorDoc
	doc.Error.Code, doc.Error.AMPCode = "busy", uint16(amp.CodeOverloaded)
	doc.Error.Message = fmt.Sprintf("the admin socket serves at most %d connections at once; retry when one ends", MaxConns)
	body, _ := json.Marshal(doc)
	return fmt.Appendf(nil, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
}()

// refuseWait is how long a connection beyond MaxConns gets to send its
// request's head before the busy answer (refuse), and then to send what
// it still has while that answer is read; refuseHead is how many bytes
// of the head are read, refuseDrain how many are discarded after it.
const (
	refuseWait  = time.Second
	refuseHead  = 16 << 10
	refuseDrain = 8 << 20
)

// connLimit is the admin socket's listener, serving at most MaxConns
// connections at once: Accept counts each it hands to the server, the
// server's ConnState hook (state) counts it off when it closes. One
// beyond them is answered busy by refuse (at most MaxConns at once,
// each for refuseWait at most; beyond those too it is closed unanswered).
type connLimit struct {
	net.Listener
	mu       sync.Mutex
	open     int
	refusing int
}

// Accept returns the next connection within MaxConns, refusing those
// beyond.
func (l *connLimit) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		l.mu.Lock()
		if l.open < MaxConns {
			l.open++
			l.mu.Unlock()
			return c, nil
		}
		answer := l.refusing < MaxConns
		if answer {
			l.refusing++
		}
		l.mu.Unlock()
		if !answer {
			c.Close()
			continue
		}
		go l.refuse(c)
	}
}

// state is the http.Server's ConnState hook: a connection Accept handed
// over is counted off once it is closed or hijacked. A new or idle one
// (its last answer written whole) gets the write deadline of what
// net/http writes before the next answer begins (betweenWrites): the
// last answer's deadline (rateAnswer) may have passed, and no deadline
// at all would let a caller that reads nothing hold a 400 being written.
func (l *connLimit) state(c net.Conn, st http.ConnState) {
	switch st {
	case http.StateNew, http.StateIdle:
		_ = c.SetWriteDeadline(time.Now().Add(betweenWrites))
	case http.StateClosed, http.StateHijacked:
		l.mu.Lock()
		l.open--
		l.mu.Unlock()
	}
}

// refuse answers a connection beyond MaxConns busy and closes it. It
// reads the request's head first (at most refuseHead bytes, within
// refuseWait): an answer written before the caller has written its
// request may be lost to the caller's write failing on the closed
// connection. For the same reason it then shuts its writing side (the
// caller reads the answer to its end) and discards what the caller still
// sends (an import's body: at most refuseDrain bytes, within refuseWait
// again) before it closes: closed with the body unread, the caller's
// write fails (a broken pipe) and net/http's client reports that, not
// the busy answer it had been sent.
func (l *connLimit) refuse(c net.Conn) {
	defer func() {
		c.Close()
		l.mu.Lock()
		l.refusing--
		l.mu.Unlock()
	}()
	_ = c.SetDeadline(time.Now().Add(refuseWait))
	br := bufio.NewReader(io.LimitReader(c, refuseHead))
	if _, err := http.ReadRequest(br); err != nil {
		return
	}
	if _, err := c.Write(busyAnswer); err != nil {
		return
	}
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
	_ = c.SetReadDeadline(time.Now().Add(refuseWait))
	_, _ = io.Copy(io.Discard, io.LimitReader(io.MultiReader(br, c), refuseDrain))
}

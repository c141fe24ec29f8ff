package admin

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"time"

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
// The protocol is docs/CLI.md §1.7's.
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
	s := &Server{
		path: path,
		srv: &http.Server{Handler: NewHandler(store, log), ConnContext: ConnContext,
			ReadHeaderTimeout: 5 * time.Second, IdleTimeout: time.Minute},
		done: make(chan error, 1),
	}
	go func() {
		err := s.srv.Serve(ln)
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

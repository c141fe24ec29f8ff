//go:build unix

package agent

import (
	"net/http"

	"github.com/ampbundle/ampbundle/internal/admin"
)

// serveAdminSocket serves the admin API of the env's store on a socket and
// returns a Registry dialled to it.
func serveAdminSocket(e *env) *admin.Registry {
	e.t.Helper()
	sock := admin.SocketPath(e.store.Path())
	ln, err := admin.Listen(sock)
	if err != nil {
		e.t.Fatal(err)
	}
	srv := &http.Server{Handler: admin.NewHandler(e.store, nil), ConnContext: admin.ConnContext}
	go srv.Serve(ln)
	e.t.Cleanup(func() { srv.Close() })
	c, err := admin.Dial(sock)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { c.Close() })
	return &c.Registry
}

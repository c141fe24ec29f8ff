//go:build !unix

package agent

import "github.com/ampbundle/ampbundle/internal/admin"

// serveAdminSocket: there is no admin socket on this system
// (internal/admin's Listen needs Unix file modes).
func serveAdminSocket(e *env) *admin.Registry {
	e.t.Helper()
	e.t.Skip("the admin socket needs a Unix system")
	return nil
}

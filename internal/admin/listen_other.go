//go:build !unix

package admin

import (
	"errors"
	"net"
)

// listenPrivate: without Unix file modes the socket could not be kept
// private, so there is no admin socket on this system.
func listenPrivate(string) (net.Listener, error) {
	return nil, errors.New("the admin socket needs a Unix system")
}

// checkPrivate is never reached here: listenPrivate fails first.
func checkPrivate(string) error { return errors.New("the admin socket needs a Unix system") }

//go:build !unix

package admin

import "errors"

// storeFileID cannot name a file here; there is no admin socket on this
// system either (listenPrivate).
func storeFileID(string) (string, error) {
	return "", errors.New("the admin socket needs a Unix system")
}

package ocitransport_test

import (
	"crypto/tls"
	"testing"

	"github.com/ampbundle/ampbundle/ocitransport/ocitest"
)

func newTLS(t *testing.T, reg *ocitest.Registry) *tls.Config {
	t.Helper()
	return &tls.Config{RootCAs: reg.CAPool, MinVersion: tls.VersionTLS12}
}

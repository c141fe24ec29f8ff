package cliutil

import (
	"crypto/tls"
	"crypto/x509"
)

// maxPEMFile bounds a certificate, key or CA file.
const maxPEMFile = 1 << 20

// ServerTLS loads a certificate chain and its key (PEM files) into a TLS
// server configuration (TLS 1.2 or later). A pair that does not load is
// tls_config.
func ServerTLS(certFile, keyFile string) (*tls.Config, error) {
	certPEM, err := ReadFile(certFile, maxPEMFile, "tls certificate")
	if err != nil {
		return nil, err
	}
	keyPEM, err := ReadFile(keyFile, maxPEMFile, "tls key")
	if err != nil {
		return nil, err
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, Failf("tls_config", "cannot load the tls certificate and key").WithCause(err)
	}
	return &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}, nil
}

// ClientTLS returns a TLS client configuration (TLS 1.2 or later) that
// trusts exactly the CA certificates in caFile (PEM). A file without a
// certificate is tls_config.
func ClientTLS(caFile string) (*tls.Config, error) {
	data, err := ReadFile(caFile, maxPEMFile, "CA file")
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		return nil, Failf("tls_config", "the CA file holds no PEM certificate")
	}
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
}

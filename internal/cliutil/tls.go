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
	return ServerTLSNamed(certFile, keyFile, "tls certificate", "tls key")
}

// ServerTLSNamed is ServerTLS whose errors call the two files certName
// and keyName (the flags that gave them, "--etcd-cert file"), so that a
// command with several TLS flags says which file does not load or cannot
// be read; no error holds what a file holds (CLI-50).
func ServerTLSNamed(certFile, keyFile, certName, keyName string) (*tls.Config, error) {
	certPEM, err := ReadFile(certFile, maxPEMFile, certName)
	if err != nil {
		return nil, err
	}
	keyPEM, err := ReadFile(keyFile, maxPEMFile, keyName)
	if err != nil {
		return nil, err
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, Failf("tls_config", "cannot load the %s and the %s", certName, keyName).WithCause(err)
	}
	return &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}, nil
}

// ClientTLS returns a TLS client configuration (TLS 1.2 or later) that
// trusts exactly the CA certificates in caFile (PEM). A file without a
// certificate is tls_config.
func ClientTLS(caFile string) (*tls.Config, error) {
	return ClientTLSNamed(caFile, "CA file")
}

// ClientTLSNamed is ClientTLS whose errors call the file name (the flag
// that gave it, "--etcd-ca file"); no error holds what the file holds.
func ClientTLSNamed(caFile, name string) (*tls.Config, error) {
	data, err := ReadFile(caFile, maxPEMFile, name)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		return nil, Failf("tls_config", "the %s holds no PEM certificate", name)
	}
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
}

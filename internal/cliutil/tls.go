package cliutil

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"io/fs"
	"os"
	"strings"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/keyfile"
)

// maxPEMFile bounds a certificate, key or CA file.
const maxPEMFile = 1 << 20

// ServerTLSNamed loads a certificate chain and its key (PEM files) into a
// TLS server configuration (TLS 1.2 or later); a pair that does not load
// is tls_config. Its errors call the two files certName and keyName (the
// flags that gave them, "--etcd-cert file"), so that a command with
// several TLS flags says which file does not load or cannot be read; no
// error holds what a file holds (CLI-50). The key file is judged as a
// private key file is (keyfile.CheckOwnerOnly, on the file opened, before
// it is read): another user's, or one group or others may read or write,
// is insecure_key_file; so is the certificate file when it holds a
// private key too (docs/SPEC-DECISIONS.md, CLI-63).
func ServerTLSNamed(certFile, keyFile, certName, keyName string) (*tls.Config, error) {
	certPEM, err := readPEMFile(certFile, certName, false)
	if err != nil {
		return nil, err
	}
	keyPEM, err := readPEMFile(keyFile, keyName, true)
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
// certificate is tls_config; so is one another user owns or group or
// others may write (ReadCAFile).
func ClientTLS(caFile string) (*tls.Config, error) {
	return ClientTLSNamed(caFile, "CA file")
}

// ClientTLSNamed is ClientTLS whose errors call the file name (the flag
// that gave it, "--etcd-ca file"); no error holds what the file holds.
func ClientTLSNamed(caFile, name string) (*tls.Config, error) {
	data, err := ReadCAFile(caFile, name, "tls_config")
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		return nil, Failf("tls_config", "the %s holds no PEM certificate", name)
	}
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
}

// ReadCAFile reads a CA file (PEM, at most 1 MiB) as ReadFile reads one
// (a regular file or a pipe, links followed), once the file opened is
// judged as a trust anchor (caWriters, on its fstat, before anything is
// read): where mode bits are access rights (Unix) its owner must be this
// process's effective user or root and no group or other write bit may
// be set, as for the agent's config file (docs/SPEC-DECISIONS.md,
// CLI-54, CLI-86). Whoever may write it chooses which servers a client
// trusts, or which client certificates a server accepts. Such a file is
// refused with the caller's error name (refused: tls_config, invalid_ca)
// and a hint to chown or chmod go-w it; name calls the file in errors
// ("--etcd-ca file"), never its path or what it holds.
func ReadCAFile(path, name string, refused amp.ErrName) ([]byte, error) {
	return readFileChecked(path, maxPEMFile, name, func(_ *os.File, st fs.FileInfo) error {
		return caWriters(st, name, refused)
	}, PipeWait)
}

// readPEMFile reads a TLS file as ReadFile reads one (a regular file or a
// pipe, at most maxPEMFile bytes), judging the open file as a private key
// file is judged (keyfile.CheckOwnerOnly: owner this user or root, no
// access for group or others; on Windows the access list) before it is
// read. A key file's refusal is returned before anything is read; a
// certificate file's only when what it holds has a private key block (a
// file holding the chain and its key, given to both flags or not).
func readPEMFile(path, name string, key bool) ([]byte, error) {
	var verdict error
	data, err := readFileChecked(path, maxPEMFile, name, func(f *os.File, st fs.FileInfo) error {
		verdict = keyfile.CheckOwnerOnly(f, st, "the "+name)
		if key {
			return verdict
		}
		return nil
	}, PipeWait)
	if err != nil {
		return nil, err
	}
	if verdict != nil && holdsPrivateKey(data) {
		clear(data)
		return nil, verdict
	}
	return data, nil
}

// holdsPrivateKey reports whether data has a PEM block of a private key
// of any kind ("PRIVATE KEY", "EC PRIVATE KEY", "ENCRYPTED PRIVATE KEY",
// ...).
func holdsPrivateKey(data []byte) bool {
	for rest := data; ; {
		var block *pem.Block
		if block, rest = pem.Decode(rest); block == nil {
			return false
		}
		if strings.HasSuffix(block.Type, "PRIVATE KEY") {
			return true
		}
	}
}

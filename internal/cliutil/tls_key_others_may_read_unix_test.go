//go:build unix

package cliutil

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/keyfile"
)

// tlsPair returns a self-signed certificate and its key, each as PEM.
func tlsPair(t *testing.T) (certPEM, keyPEM []byte) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "localhost"},
		NotBefore: time.Unix(0, 0), NotAfter: time.Unix(1<<32, 0), DNSNames: []string{"localhost"}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kd, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kd})
}

// writeMode writes data to dir/name with exactly mode (chmod: the umask
// does not narrow it).
func writeMode(t *testing.T, dir, name string, data []byte, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestTLSKeyFileOthersMayReadIsRefused
//
// Attack (another local user, or whoever owns a file the operator names):
// the TLS private key of serve's --tls-key, mcp's and the etcd ledger's
// --etcd-key was read with ReadFile, which judges neither owner nor mode,
// while a signing key or a --passphrase-file of the same program is
// refused when group or others may read it or another user owns it
// (insecure_key_file, CLI-51, CLI-53). A key file of mode 0644 (as
// `openssl req -newkey` leaves one under umask 022) or 0640, or one given
// to uid 65534, was loaded without a word: every local user could read the
// key that authenticates the agent (and impersonate it to its callers or
// to etcd), or its owner replace it. A certificate file that holds the key
// too (one PEM file given to both flags, or a chain with its key) is the
// same secret. Now the key file, and a certificate file holding a private
// key, are judged as a private key file is, on the open file:
// insecure_key_file, and the message names the flag, never what the file
// holds. A certificate file without a key may be read by all; a pipe
// (<(…)) of this user is read as before.
func TestTLSKeyFileOthersMayReadIsRefused(t *testing.T) {
	certPEM, keyPEM := tlsPair(t)
	both := append(append([]byte{}, certPEM...), keyPEM...)
	tests := []struct {
		name     string
		certMode os.FileMode
		keyMode  os.FileMode
		combined bool // one file holding both, given to both flags
		certKey  bool // the certificate file holds the key too, the key file apart
		want     amp.ErrName
	}{
		{"key owner-only, certificate readable by all", 0o644, 0o600, false, false, ""},
		{"key readable by all", 0o644, 0o644, false, false, keyfile.ErrInsecureKeyFile},
		{"key readable by the group", 0o644, 0o640, false, false, keyfile.ErrInsecureKeyFile},
		{"key writable by others", 0o644, 0o602, false, false, keyfile.ErrInsecureKeyFile},
		{"one file with both, owner-only", 0o600, 0o600, true, false, ""},
		{"one file with both, readable by all", 0o644, 0o644, true, false, keyfile.ErrInsecureKeyFile},
		{"certificate file holding the key, readable by all", 0o644, 0o600, false, true, keyfile.ErrInsecureKeyFile},
		{"certificate file holding the key, owner-only", 0o600, 0o600, false, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			var cert, key string
			switch {
			case tt.combined:
				cert = writeMode(t, dir, "both.pem", both, tt.keyMode)
				key = cert
			case tt.certKey:
				cert = writeMode(t, dir, "cert.pem", both, tt.certMode)
				key = writeMode(t, dir, "key.pem", keyPEM, tt.keyMode)
			default:
				cert = writeMode(t, dir, "cert.pem", certPEM, tt.certMode)
				key = writeMode(t, dir, "key.pem", keyPEM, tt.keyMode)
			}
			cfg, err := ServerTLSNamed(cert, key, "--etcd-cert file", "--etcd-key file")
			if tt.want == "" {
				if err != nil || cfg == nil || len(cfg.Certificates) != 1 {
					t.Fatalf("got %v, %v; want the pair loaded", cfg, err)
				}
				return
			}
			if amp.NameOf(err) != tt.want || cfg != nil {
				t.Fatalf("got %v, %v; want %s", cfg, err, tt.want)
			}
			msg := err.Error()
			if !strings.Contains(msg, "--etcd-") || strings.Contains(msg, "PRIVATE KEY") || strings.Contains(msg, dir) {
				t.Fatalf("message %q: want the flag named, neither the file's contents nor its path", msg)
			}
		})
	}
}

// TestTLSKeyFileOfAnotherUserIsRefused: a key file another user owns
// (here uid 65534), mode 0600 or not, is that user's to read and to
// replace with a key of their choosing; it is refused as a signing key
// of that owner is (CLI-53). Root alone can give a file away: elsewhere
// the test is skipped.
func TestTLSKeyFileOfAnotherUserIsRefused(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give a file to another user")
	}
	certPEM, keyPEM := tlsPair(t)
	dir := t.TempDir()
	cert := writeMode(t, dir, "cert.pem", certPEM, 0o644)
	key := writeMode(t, dir, "key.pem", keyPEM, 0o600)
	if err := os.Chown(key, 65534, 65534); err != nil {
		t.Skipf("cannot give the file away: %v", err)
	}
	cfg, err := ServerTLSNamed(cert, key, "--tls-cert file", "--tls-key file")
	if amp.NameOf(err) != keyfile.ErrInsecureKeyFile || cfg != nil {
		t.Fatalf("got %v, %v; want %s", cfg, err, keyfile.ErrInsecureKeyFile)
	}
	if !strings.Contains(err.Error(), "uid 65534") {
		t.Fatalf("message %q: want the owner's uid", err)
	}
}

// TestTLSKeyGivenAsAPipeIsStillRead: a process substitution (--tls-key
// <(vault …)) is a pipe of this user, mode 0600: it is judged as a file
// is (fstat of what was opened), and read as CLI-57 reads a pipe.
func TestTLSKeyGivenAsAPipeIsStillRead(t *testing.T) {
	certPEM, keyPEM := tlsPair(t)
	cert := writeMode(t, t.TempDir(), "cert.pem", certPEM, 0o644)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	go func() {
		w.Write(keyPEM)
		w.Close()
	}()
	path := fmt.Sprintf("/dev/fd/%d", r.Fd())
	if _, err := os.Stat(path); err != nil {
		t.Skipf("no /dev/fd here: %v", err)
	}
	cfg, err := ServerTLSNamed(cert, path, "--tls-cert file", "--tls-key file")
	if err != nil || cfg == nil || len(cfg.Certificates) != 1 {
		t.Fatalf("got %v, %v; want the pair loaded from the pipe", cfg, err)
	}
}

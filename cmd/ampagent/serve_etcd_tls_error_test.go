package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
)

// TestEtcdTLSFileThatDoesNotLoadIsTLSConfig: the etcd ledger's TLS files
// had a reader of their own whose errors were invalid_config, where
// docs/CLI.md's error table names tls_config for a certificate, key or CA
// that does not load: a script telling a broken config from a broken
// certificate was misled. They are read as --listen-tcp's and --tls-ca's
// are: tls_config, io_error for one that cannot be read, limit_exceeded
// over 1 MiB (CLI-43).
func TestEtcdTLSFileThatDoesNotLoadIsTLSConfig(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	junk := write("junk.pem", "not a certificate\n")
	huge := write("huge.pem", strings.Repeat("x", 1<<20+1))
	missing := filepath.Join(dir, "missing.pem")
	for _, tc := range []struct {
		name, ca, cert, key string
		want                amp.ErrName
	}{
		{"a CA file without a certificate", junk, "", "", "tls_config"},
		{"a certificate and key that do not load", "", junk, junk, "tls_config"},
		{"a missing CA file", missing, "", "", "io_error"},
		{"a CA file over 1 MiB", huge, "", "", "limit_exceeded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := etcdTLS(tc.ca, tc.cert, tc.key)
			if got := amp.NameOf(err); got != tc.want {
				t.Fatalf("etcdTLS: %v (%q), want %q", err, got, tc.want)
			}
		})
	}
}

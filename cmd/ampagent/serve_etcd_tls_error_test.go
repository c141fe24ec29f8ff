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

// TestEtcdTLSErrorNamesTheFlagNotTheFileContents: serve takes three etcd
// TLS files (--etcd-ca, --etcd-cert, --etcd-key) beside the listeners'
// own; since CLI-43 read them with the listeners' reader, a file that
// does not load or cannot be read was "the CA file", "the tls
// certificate", "the tls key": the user was not told which flag gave the
// wrong file (threat: a broken ledger config read as a broken listener
// one). Each error names the flag, never a line of the file (a key's
// PEM). Each case: the files, the flags its message must name, and the
// one it must not (CLI-50).
func TestEtcdTLSErrorNamesTheFlagNotTheFileContents(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	const secret = "PRIVATE-LINE-4f1c9e"
	junk := write("junk.pem", secret+"\n")
	huge := write("huge.pem", strings.Repeat(secret, 1<<20/len(secret)+1))
	missing := filepath.Join(dir, "missing.pem")
	for _, tc := range []struct {
		name, ca, cert, key string
		names               []string
		notName             string
	}{
		{"a CA file without a certificate", junk, "", "", []string{"--etcd-ca"}, "--etcd-cert"},
		{"a missing CA file", missing, "", "", []string{"--etcd-ca"}, "--etcd-cert"},
		{"a CA file over 1 MiB", huge, "", "", []string{"--etcd-ca"}, "--etcd-cert"},
		{"a missing certificate", "", missing, junk, []string{"--etcd-cert"}, "--etcd-key"},
		{"a missing key", "", junk, missing, []string{"--etcd-key"}, "--etcd-cert"},
		{"a certificate over 1 MiB", "", huge, junk, []string{"--etcd-cert"}, "--etcd-key"},
		{"a certificate and key that do not load", "", junk, junk, []string{"--etcd-cert", "--etcd-key"}, "--etcd-ca"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := etcdTLS(tc.ca, tc.cert, tc.key)
			if err == nil {
				t.Fatal("etcdTLS loaded files that do not load")
			}
			msg := amp.SafeMessage(err) // the message of the error document
			for _, flag := range tc.names {
				if !strings.Contains(msg, flag) {
					t.Errorf("the error %q does not name %s", msg, flag)
				}
			}
			if strings.Contains(msg, tc.notName) {
				t.Errorf("the error %q names %s, whose file was not wrong", msg, tc.notName)
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("the error echoes the file's contents: %q", err.Error())
			}
		})
	}
}

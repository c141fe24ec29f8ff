//go:build unix

package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/client"
	"github.com/ampbundle/ampbundle/internal/cliutil"
	"github.com/ampbundle/ampbundle/keyfile"
	"github.com/ampbundle/ampbundle/transport/ampstcp"
)

// tlsFiles writes a self-signed certificate for 127.0.0.1 and its key.
func tlsFiles(t *testing.T) (cert, key string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: "test agent"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kd, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cert, key = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	os.WriteFile(cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
	os.WriteFile(key, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kd}), 0o600)
	return cert, key
}

// runCLINow is runCLI on the wall clock, the clock of startServe's agent.
func runCLINow(t *testing.T, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	env := &cliutil.Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Now: time.Now, Rand: rand.Reader,
		Getenv: func(string) string { return "" }}
	code := run(context.Background(), env, append([]string{"ampagent"}, args...))
	return result{code, out.String(), errb.String()}
}

func TestQueryOverTCPPlainAndTLS(t *testing.T) {
	db, key := serveStore(t)
	caller, _ := keygen(t, t.TempDir(), "caller.pem")
	cert, tlsKey := tlsFiles(t)
	// The agent declares what it can run.
	cfg := writeConfig(t, map[string]any{"handlers": map[string]any{"org.example.translate.text:2.1.0": map[string]any{"command": []string{"/bin/cat"}}}})
	for _, c := range []struct {
		name   string
		serve  []string
		scheme string
		query  []string
	}{
		{"plain on loopback", nil, "amp://", nil},
		{"tls", []string{"--tls-cert", cert, "--tls-key", tlsKey}, "amps://", []string{"--tls-ca", cert}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := startServe(t, append([]string{"--db", db, "--key", key, "--allow", "*=org.example.", "--config", cfg, "--listen-tcp", "127.0.0.1:0"}, c.serve...)...)
			if !strings.HasPrefix(r.tcpURL, c.scheme) {
				t.Fatalf("listening_tcp = %q", r.tcpURL)
			}
			args := append([]string{"query", r.tcpURL, "--key", caller, "--to", r.did, "--capability", "org.example.translate.text", "--json"}, c.query...)
			q := runCLINow(t, args...)
			if q.code != 0 || !strings.Contains(q.stdout, `"verified": true`) || !strings.Contains(q.stdout, "org.example.translate.text:2.1.0") {
				t.Fatalf("query over %s: exit %d\n%s\n%s", r.tcpURL, q.code, q.stdout, q.stderr)
			}
			if res := r.stop(); res.code != 0 {
				t.Fatalf("serve exit %d: %s", res.code, res.stderr)
			}
		})
	}
}

func TestTCPRefusesUnsafeSetups(t *testing.T) {
	db, key := serveStore(t)
	caller, _ := keygen(t, t.TempDir(), "caller.pem")
	cert, tlsKey := tlsFiles(t)
	for _, c := range []struct {
		name string
		args []string
		code string
		exit int
	}{
		{"plain tcp on the network", []string{"--listen-tcp", "0.0.0.0:0"}, "unsafe_listen", 1},
		{"certificate without key", []string{"--listen-tcp", "127.0.0.1:0", "--tls-cert", cert}, "usage", 2},
		{"tls files without a tcp listener", []string{"--tls-cert", cert, "--tls-key", tlsKey}, "usage", 2},
		{"key that does not match", []string{"--listen-tcp", "127.0.0.1:0", "--tls-cert", cert, "--tls-key", key}, "tls_config", 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, exit := serveFails(t, append([]string{"--db", db, "--key", key, "--listen", "127.0.0.1:0"}, c.args...)...)
			if code != c.code || exit != c.exit {
				t.Fatalf("got %s exit %d, want %s exit %d", code, exit, c.code, c.exit)
			}
		})
	}
	for _, c := range []struct {
		name string
		args []string
		code string
		exit int
	}{
		{"plain amp:// across the network", []string{"amp://192.0.2.1:7000"}, "unsafe_plain_tcp", 1},
		{"--tls-ca for an http url", []string{"http://127.0.0.1:1", "--tls-ca", cert}, "usage", 2},
		{"amps without a port", []string{"amps://agents.example.org"}, "usage", 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := runCLI(t, "", append([]string{"query", "--json", "--key", caller, "--to", "did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK", "--capability", "org.example.x"}, c.args...)...)
			code, _ := errorDoc(t, r)
			if code != c.code || r.code != c.exit {
				t.Fatalf("got %s exit %d, want %s exit %d\n%s", code, r.code, c.code, c.exit, r.stdout)
			}
		})
	}
}

// TestTCPMaxInFlightBoundsConcurrentHandlers: --tcp-max-in-flight caps the
// messages the TCP listener handles at once, all connections together:
// with 1, four pipelined invocations never overlap in their handler; with
// the default they do (so the check can see an overlap).
func TestTCPMaxInFlightBoundsConcurrentHandlers(t *testing.T) {
	for _, c := range []struct {
		name    string
		args    []string
		overlap bool
	}{
		{"one slot", []string{"--tcp-max-in-flight", "1"}, false},
		{"default", nil, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			db, key := serveStore(t)
			dir := t.TempDir()
			// A handler that notes when another runs at the same time.
			script := `if mkdir "$D/running" 2>/dev/null; then sleep 0.3; rmdir "$D/running"; else touch "$D/overlap"; sleep 0.3; fi; ` +
				`printf '{"text":"x","detected_source":"en"}'`
			cfg := writeConfig(t, map[string]any{"handlers": map[string]any{"org.example.translate.text:2.1.0": map[string]any{
				"command": []string{"/bin/sh", "-c", script}, "env": map[string]string{"D": dir}}}})
			_, priv, _ := ed25519.GenerateKey(rand.Reader)
			id, err := (&keyfile.Keys{Ed25519: priv}).Identity("")
			if err != nil {
				t.Fatal(err)
			}
			// A caller the rules name: its programs' share is 4 (a
			// stranger from one address holds 1 at a time, CLI-41).
			r := startServe(t, append([]string{"--db", db, "--key", key, "--allow", id.DID + "=org.example.", "--config", cfg, "--listen-tcp", "127.0.0.1:0"}, c.args...)...)
			tr, err := ampstcp.NewTransport(r.tcpURL, ampstcp.ClientOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer tr.Close()
			cl, err := client.New(client.Config{Identity: id, Peer: r.did, Transport: tr, Now: time.Now, Rand: rand.Reader, Retry: client.Retry{MaxAttempts: 1}})
			if err != nil {
				t.Fatal(err)
			}
			errs := make(chan error, 4)
			for range 4 {
				go func() {
					_, err := invokeID(t, cl, "org.example.translate.text:2.1.0", map[string]any{"text": "hello", "target": "fr"}, 10000)
					errs <- err
				}()
			}
			for range 4 {
				if err := <-errs; err != nil {
					t.Fatal(err)
				}
			}
			_, statErr := os.Stat(filepath.Join(dir, "overlap"))
			if overlapped := statErr == nil; overlapped != c.overlap {
				t.Fatalf("handlers overlapped: %v, want %v", overlapped, c.overlap)
			}
		})
	}
}

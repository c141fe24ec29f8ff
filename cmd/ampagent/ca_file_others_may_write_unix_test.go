//go:build unix

package main

import (
	"bytes"
	"crypto/tls"
	"os"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/internal/cliutil"
)

// mcpAuthOf resolves the MCP listener's TLS as 'ampagent serve' does
// (mcpAuth) for the given flags, without opening anything.
func mcpAuthOf(t *testing.T, args ...string) (*tls.Config, error) {
	t.Helper()
	env := &cliutil.Env{Stdout: &bytes.Buffer{}, Stderr: &bytes.Buffer{}}
	cmd := serveCommand(env)
	var got *tls.Config
	cmd.Action = func(c *cli.Context) error {
		cfg, _, err := mcpAuth(c, c.String("mcp-listen"))
		got = cfg
		return err
	}
	app := &cli.App{Name: "ampagent", Commands: []*cli.Command{cmd}, Writer: env.Stdout, ErrWriter: env.Stderr,
		ExitErrHandler: func(*cli.Context, error) {}}
	err := app.Run(append([]string{"ampagent", "serve", "--listen", "127.0.0.1:0", "--mcp-listen", "127.0.0.1:0"}, args...))
	return got, err
}

// TestAgentCAFileAnotherUserMayWriteIsRefused
//
// Attack (a local user in the file's group, any local user, or the user
// who owns the file): serve's --mcp-client-ca was read with
// cliutil.ReadFile, which judges neither owner nor mode. A client CA of
// mode 0664 or 0606, or one owned by uid 65534, was loaded without a
// word: whoever could write it added a CA of theirs, signed a client
// certificate with any DID URI SAN, and called the agent's tools as that
// DID, past every allow rule naming it. --etcd-ca (the ledger's server)
// was read the same way. Now both are judged on the file opened, before
// a certificate is parsed, as the config file is (CLI-54): invalid_ca
// for --mcp-client-ca (its name for a CA that does not load),
// tls_config for --etcd-ca, each naming the file, with a hint (chown,
// chmod go-w). A root-owned or own 0644 file loads.
func TestAgentCAFileAnotherUserMayWriteIsRefused(t *testing.T) {
	cert, key := tlsFiles(t)
	certPEM, err := os.ReadFile(cert)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		mode os.FileMode
		uid  int // 0: the file stays this user's
		why  string
	}{
		{"readable by all, writable by its owner", 0o644, 0, ""},
		{"writable by the group", 0o664, 0, "mode 0664"},
		{"writable by others", 0o606, 0, "mode 0606"},
		{"another user's", 0o644, 65534, "uid 65534"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			ca := dir + "/ca.pem"
			if err := os.WriteFile(ca, certPEM, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(ca, tt.mode); err != nil {
				t.Fatal(err)
			}
			if tt.uid != 0 {
				if os.Geteuid() != 0 {
					t.Skip("needs root to give a file to another user")
				}
				if err := os.Chown(ca, tt.uid, tt.uid); err != nil {
					t.Skipf("cannot give the file away: %v", err)
				}
			}
			cfg, err := mcpAuthOf(t, "--mcp-tls-cert", cert, "--mcp-tls-key", key, "--mcp-client-ca", ca)
			etcd, etcdErr := etcdTLS(ca, "", "")
			if tt.why == "" {
				if err != nil || cfg == nil || cfg.ClientCAs == nil || cfg.ClientAuth != tls.RequireAndVerifyClientCert {
					t.Fatalf("--mcp-client-ca: got %v, %v; want the client CA loaded", cfg, err)
				}
				if etcdErr != nil || etcd == nil || etcd.RootCAs == nil {
					t.Fatalf("--etcd-ca: got %v, %v; want the CA loaded", etcd, etcdErr)
				}
				return
			}
			for _, r := range []struct {
				flag, file string
				want       amp.ErrName
				err        error
				loaded     bool
			}{
				{"--mcp-client-ca", "mcp client ca file", "invalid_ca", err, cfg != nil},
				{"--etcd-ca", "--etcd-ca file", "tls_config", etcdErr, etcd != nil},
			} {
				if amp.NameOf(r.err) != r.want || r.loaded {
					t.Fatalf("%s: got %v (loaded %v); want %s: another user chooses the CAs trusted", r.flag, r.err, r.loaded, r.want)
				}
				if msg := r.err.Error(); !strings.Contains(msg, r.file) || !strings.Contains(msg, tt.why) || strings.Contains(msg, dir) {
					t.Fatalf("%s: message %q: want the file named and %q, not its path", r.flag, msg, tt.why)
				}
			}
		})
	}
}

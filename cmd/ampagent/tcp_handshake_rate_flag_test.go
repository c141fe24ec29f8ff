//go:build unix

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// tlsTCP is the flags of an amps:// listener (the files are only named:
// loading the configuration does not read them), then more.
func tlsTCP(more ...string) []string {
	return append([]string{"--listen-tcp", "127.0.0.1:0", "--tls-cert", "c.pem", "--tls-key", "k.pem"}, more...)
}

// TestTCPHandshakeRateTheOperatorSetsReachesTheTCPServer: the amps://
// listener bounds the TLS handshakes one peer makes it begin, 16 a
// second (docs/SPEC-DECISIONS.md TRANSPORT-40), but `ampagent serve`
// had no way to set that rate: an operator behind a TCP proxy, where
// every caller is one address, could not raise it, nor one on a small
// host lower it. --tcp-handshake-rate and the config file's
// "tcp_handshake_rate" (the flag over the file, as for --peer-share)
// are the TCP server's PeerHandshakeRate; left out, 0 (ampstcp's 16)
// (CLI-98).
func TestTCPHandshakeRateTheOperatorSetsReachesTheTCPServer(t *testing.T) {
	file := writeConfig(t, map[string]any{"tcp_handshake_rate": 64})
	for _, tc := range []struct {
		name string
		args []string
		want int
	}{
		{"left out: ampstcp's default", nil, 0},
		{"the flag's", []string{"--tcp-handshake-rate", "4"}, 4},
		{"the config file's", []string{"--config", file}, 64},
		{"the flag over the file", []string{"--config", file, "--tcp-handshake-rate", "2"}, 2},
		{"the bound", []string{"--tcp-handshake-rate", "2000"}, maxTCPHandshakeRate},
		{"one", []string{"--tcp-handshake-rate", "1"}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := serveConfigOf(t, tlsTCP(tc.args...)...)
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			if got := tcpServerOptions(cfg, nil).PeerHandshakeRate; got != tc.want {
				t.Fatalf("the TCP server's PeerHandshakeRate is %d, want %d", got, tc.want)
			}
		})
	}
}

// TestTCPHandshakeRateOutOfItsBoundsIsRefusedBeforeAnything: a rate of
// 0 or less would read as the default, one past maxTCPHandshakeRate
// bounds nothing (a peer's handshakes would take a whole core), and the
// flag without an amps:// listener would change nothing while the
// operator believes it does. Each is refused, as the flag's usage error
// (exit 2) or the file's invalid_config (exit 1), naming the setting,
// before the key, the store or a listener is touched (CLI-98).
func TestTCPHandshakeRateOutOfItsBoundsIsRefusedBeforeAnything(t *testing.T) {
	for _, tc := range []struct {
		name string
		args func(t *testing.T) []string
		code string
		exit int
		msg  string
	}{
		{"flag 0", func(*testing.T) []string { return tlsTCP("--tcp-handshake-rate", "0") }, "usage", 2, "--tcp-handshake-rate must be between 1 and 2000"},
		{"flag negative", func(*testing.T) []string { return tlsTCP("--tcp-handshake-rate=-1") }, "usage", 2, "--tcp-handshake-rate must be between 1 and 2000"},
		{"flag past the bound", func(*testing.T) []string { return tlsTCP("--tcp-handshake-rate", "2001") }, "usage", 2, "--tcp-handshake-rate must be between 1 and 2000"},
		{"flag without a tcp listener", func(*testing.T) []string { return []string{"--tcp-handshake-rate", "8"} }, "usage", 2, "--tcp-handshake-rate is for --listen-tcp"},
		{"flag on plain tcp", func(*testing.T) []string { return []string{"--listen-tcp", "127.0.0.1:0", "--tcp-handshake-rate", "8"} }, "usage", 2, "--tcp-handshake-rate is for amps://"},
		{"file negative", func(t *testing.T) []string {
			return []string{"--config", writeConfig(t, map[string]any{"tcp_handshake_rate": -1})}
		}, "invalid_config", 1, "tcp_handshake_rate must be at least 1"},
		{"file past the bound", func(t *testing.T) []string {
			return []string{"--config", writeConfig(t, map[string]any{"tcp_handshake_rate": 1 << 20})}
		}, "invalid_config", 1, "tcp_handshake_rate must be between 1 and 2000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			args := append([]string{"--db", filepath.Join(dir, "none.db"), "--key", filepath.Join(dir, "none.key"), "--listen", "127.0.0.1:0"}, tc.args(t)...)
			r := serveRefusal(t, append([]string{"--json"}, args...)...)
			var doc struct {
				Error struct{ Code, Message string } `json:"error"`
			}
			if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
				t.Fatalf("not an error document: %v\n%s", err, r.stdout)
			}
			if r.code != tc.exit || doc.Error.Code != tc.code || !strings.Contains(doc.Error.Message, tc.msg) {
				t.Fatalf("got %s exit %d %q, want %s exit %d naming %q", doc.Error.Code, r.code, doc.Error.Message, tc.code, tc.exit, tc.msg)
			}
			if left, _ := os.ReadDir(dir); len(left) != 0 {
				t.Fatalf("a refused start left %d files beside the store", len(left))
			}
		})
	}
}

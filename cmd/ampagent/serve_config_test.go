//go:build unix

package main

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestServeConfigRefusedBeforeAnythingIsOpened: every refusal of the
// resolved serve configuration (listeners facing the network unasked,
// flags that go together, a handler program that cannot run, readiness
// durations) comes from Validate before the key, the store or a listener
// is touched: the key and store named do not exist, so a check made later
// would answer key_unreadable, and the store's directory stays empty
// (threat: a side effect, an admin socket or a ledger file, left by a
// start that is refused).
func TestServeConfigRefusedBeforeAnythingIsOpened(t *testing.T) {
	dir := t.TempDir()
	base := []string{"--db", filepath.Join(dir, "none.db"), "--key", filepath.Join(dir, "none.key")}
	missing := writeConfig(t, map[string]any{"handlers": map[string]any{"org.example.translate.text:2.1.0": map[string]any{"command": []string{filepath.Join(dir, "no-such-program")}}}})
	for _, tc := range []struct {
		name string
		args []string
		code string
		exit int
	}{
		{"metrics on the network without consent", []string{"--metrics-listen", "0.0.0.0:0"}, "unsafe_listen", 1},
		{"catalog listener on the network without consent", []string{"--catalog-listen", "0.0.0.0:0"}, "unsafe_listen", 1},
		{"catalog on a network agent listener", []string{"--listen", "0.0.0.0:0", "--unsafe-listen", "--catalog"}, "unsafe_listen", 1},
		{"plain tcp on the network without consent", []string{"--listen-tcp", "0.0.0.0:0"}, "unsafe_listen", 1},
		{"tls certificate without a tcp listener", []string{"--tls-cert", "c.pem", "--tls-key", "k.pem"}, "usage", 2},
		{"tls certificate without its key", []string{"--listen-tcp", "127.0.0.1:0", "--tls-cert", "c.pem"}, "usage", 2},
		{"etcd TLS without an etcd ledger", []string{"--etcd-ca", "ca.pem"}, "usage", 2},
		{"etcd off this host in plain text", []string{"--ledger", "etcd://192.0.2.1:2379"}, "usage", 2},
		{"etcd client certificate without its key", []string{"--ledger", "etcd://127.0.0.1:2379", "--etcd-cert", "c.pem"}, "usage", 2},
		{"negative expiry window", []string{"--ready-expiry-window", "-1s"}, "usage", 2},
		{"no store recheck", []string{"--ready-recheck", "0s"}, "usage", 2},
		{"handler program missing", []string{"--config", missing}, "handler_program_missing", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append(append([]string{}, base...), tc.args...)
			if !slices.Contains(tc.args, "--listen") {
				args = append(args, "--listen", "127.0.0.1:0")
			}
			code, exit := serveFails(t, args...)
			if exit != tc.exit || code != tc.code {
				t.Fatalf("got %s exit %d, want %s exit %d", code, exit, tc.code, tc.exit)
			}
			if left, _ := os.ReadDir(dir); len(left) != 0 {
				t.Fatalf("a refused start left %d files beside the store", len(left))
			}
		})
	}
}

// TestServeConfigValidateKeepsServeChecksToServe: the mcp command shares
// the loader but has no listeners, readiness or program checks of serve;
// its configuration (serve unset, zero readiness durations) passes, while
// the same settings for serve are refused (threat: the mcp command
// refused for flags it does not have, or serve started without them).
func TestServeConfigValidateKeepsServeChecksToServe(t *testing.T) {
	cfg := &serveConfig{Listen: "stdio"}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("mcp's configuration refused: %v", err)
	}
	cfg.serve = true
	cfg.Listen = "127.0.0.1:0"
	if err := cfg.Validate(); err == nil {
		t.Fatal("serve's configuration without a store recheck passed")
	}
}

//go:build unix

package main

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
)

// TestHandlerConfigWhoseStringHoldsNULIsRefused: a handler whose
// argument, environment value or working directory holds a NUL ("\u0000"
// in the config file's JSON) can never run: the kernel's argv, envp and
// paths end at a NUL, and os/exec refuses such a string at every start
// (threat: the config loaded, `serve` started and `/readyz` said ready,
// `mcp` listed the tool, and every invocation failed 5001 handler_failed
// with nothing at the start naming the cause). Each is refused when the
// config is loaded, invalid_config, by serve's and mcp's checks alike
// (docs/SPEC-DECISIONS.md CLI-68); the program, run as configured, indeed
// fails at every call.
func TestHandlerConfigWhoseStringHoldsNULIsRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		h    execHandler
	}{
		{"an argument", execHandler{Command: []string{"/bin/echo", "1\x00; rm -rf /"}}},
		{"the program", execHandler{Command: []string{"/bin/echo\x00x", "1"}}},
		{"an environment value", execHandler{Command: []string{"/bin/echo", "1"}, Env: map[string]string{"LANG": "C\x00"}}},
		{"the working directory", execHandler{Command: []string{"/bin/echo", "1"}, Dir: t.TempDir() + "\x00"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// As configured, the program cannot start: each call fails.
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if _, err := runProgram("org.example.echo:1.0.0", tc.h, slog.New(slog.DiscardHandler), nil)(ctx, map[string]any{}); amp.NameOf(err) != "handler_failed" {
				t.Fatalf("the program ran: %v", err)
			}
			for _, serve := range []bool{false, true} {
				cfg := &serveConfig{Listen: "127.0.0.1:0", Handlers: map[string]execHandler{"org.example.echo:1.0.0": tc.h}}
				cfg.serve, cfg.allowMissingHandlers, cfg.readyRecheck = serve, true, time.Second
				cfg.resolveHandlers(hostMounts())
				if err := cfg.Validate(); amp.NameOf(err) != "invalid_config" {
					t.Fatalf("serve=%v: the config was not refused invalid_config: %v", serve, err)
				}
			}
		})
	}
}

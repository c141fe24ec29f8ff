//go:build unix

package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/capability"
	"github.com/ampbundle/ampbundle/client"
)

// TestServeTakesInvocationParamsByStream: with --stream-dir, serve takes
// the params of an invocation as a stream (chunked, verified, then named
// by the CAP_INVOKE) and runs the handler on them, from the client API and
// from ampagent invoke --stream-params over HTTP and TCP; streamed params over
// the message limit that break the input schema are refused like inline
// ones; a document stream is refused at its start (serve has no
// application to hand documents to); spool files of a previous run are
// removed at start and none are left after use.
func TestServeTakesInvocationParamsByStream(t *testing.T) {
	db, key := serveStore(t)
	spool := t.TempDir()
	stale := filepath.Join(spool, "ampparams-stale")
	if err := os.WriteFile(stale, []byte("left by a crash"), 0o600); err != nil {
		t.Fatal(err)
	}
	mine := filepath.Join(spool, "operator-notes.txt")
	if err := os.WriteFile(mine, []byte("not a spool file"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := writeConfig(t, map[string]any{
		"allow": []string{"*=org.example."},
		"handlers": map[string]any{
			"org.example.translate.text:2.1.0": map[string]any{"command": []string{"/bin/sh", "-c",
				`n=$(wc -c | tr -d ' '); printf '{"text":"%s","detected_source":"en"}' "$n"`}},
		},
	})
	r := startServe(t, "--db", db, "--key", key, "--config", cfg, "--stream-dir", spool, "--max-body", "1048576", "--listen-tcp", "127.0.0.1:0")
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("a stale spool file was left at start")
	}
	if _, err := os.Stat(mine); err != nil {
		t.Fatal("a file that is not a spool file was removed")
	}
	c := newTestClient(t, r.url, r.did)
	id, _ := capability.ParseID("org.example.translate.text:2.1.0")
	ctx := context.Background()

	params, _ := amp.Marshal(map[string]any{"text": strings.Repeat("a", 4000), "target": "fr"})
	res, _, err := c.InvokeLarge(ctx, capability.Invoke{ID: id}, params, 1024)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := amp.Unmarshal(res.Result, &out); err != nil || out["text"] == "" || out["text"] == "0" {
		t.Fatalf("the handler did not get the streamed params: %v %v", out, err)
	}

	// The same through the command: ampagent invoke --stream-params.
	kf, _ := keygen(t, t.TempDir(), "caller.pem")
	for _, url := range []string{r.url, r.tcpURL} {
		inv := runCLINow(t, "invoke", url, "--json", "--key", kf, "--to", r.did, "--id", "org.example.translate.text:2.1.0",
			"--params", `{"text":"`+strings.Repeat("c", 3000)+`","target":"fr"}`, "--stream-params")
		if inv.code != 0 || !strings.Contains(inv.stdout, `"streamed_params": true`) || !strings.Contains(inv.stdout, `"status": "success"`) {
			t.Fatalf("invoke %s --stream-params: exit %d\n%s\n%s", url, inv.code, inv.stdout, inv.stderr)
		}
	}

	huge, _ := amp.Marshal(map[string]any{"text": strings.Repeat("a", 2<<20), "target": "fr"})
	if _, _, err := c.InvokeLarge(ctx, capability.Invoke{ID: id}, huge, 512<<10); !errors.Is(err, amp.CodeSchemaViolation) {
		t.Fatalf("schema-violating streamed params over the message limit: %v", err)
	}

	doc := []byte("a document")
	_, _, err = c.SendStream(ctx, client.Stream{ContentType: "text/plain", Size: uint64(len(doc))}, bytes.NewReader(doc))
	if !errors.Is(err, amp.CodeInvalidMessage) || !strings.Contains(err.Error(), "only streams of invocation params") {
		t.Fatalf("document stream: %v", err)
	}
	left, _ := os.ReadDir(spool)
	if len(left) != 1 {
		t.Fatalf("spool directory after use: %v", left)
	}
	if res := r.stop(); res.code != 0 {
		t.Fatalf("serve exit %d: %s", res.code, res.stderr)
	}
}

func TestServeRefusesAStreamDirItCannotTrust(t *testing.T) {
	db, key := serveStore(t)
	open := t.TempDir()
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "f")
	os.WriteFile(file, nil, 0o600)
	for _, tc := range []struct {
		name string
		args []string
		code string
		exit int
	}{
		{"writable by others", []string{"--stream-dir", open}, "invalid_stream_dir", 1},
		{"missing", []string{"--stream-dir", filepath.Join(open, "none")}, "invalid_stream_dir", 1},
		{"a file", []string{"--stream-dir", file}, "invalid_stream_dir", 1},
		{"limits without a directory", []string{"--stream-max-bytes", "10485760"}, "usage", 2},
		{"params larger than the stream budget", []string{"--stream-dir", t.TempDir(), "--stream-max-bytes", "1048576", "--stream-max-params", "2097152"}, "usage", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, exit := serveFails(t, append([]string{"--db", db, "--key", key, "--listen", "127.0.0.1:0"}, tc.args...)...)
			if exit != tc.exit || code != tc.code {
				t.Fatalf("got %s exit %d, want %s exit %d", code, exit, tc.code, tc.exit)
			}
		})
	}
}

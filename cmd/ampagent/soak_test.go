//go:build linux

package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/capability"
)

// TestSoak is not part of the normal suite: it runs only when AMPAGENT_SOAK
// is a duration, e.g.
//
//	AMPAGENT_SOAK=60s go test ./cmd/ampagent -run TestSoak -v -timeout 10m
//
// It builds ampagent, runs `ampagent serve` as a separate process with a
// program handler, and sends for that long, at once: valid invocations and
// pings of an allowed caller (some sent twice, whose replies must be
// byte-identical), invocations of a handler that floods its stdout, and
// hostile traffic: forged signatures, garbage, 16 MiB unauthenticated
// memory bombs, a bomb signed by the allowed caller, pings and
// invocations from fresh did:keys, bodies over the size limit. It prints
// the agent's peak RSS (VmHWM), the ledger file's size and every count, and
// fails on any unexpected answer.
func TestSoak(t *testing.T) {
	d, err := time.ParseDuration(os.Getenv("AMPAGENT_SOAK"))
	if err != nil || d <= 0 {
		t.Skip("set AMPAGENT_SOAK=60s to run the soak")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "ampagent")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	db, key := serveStore(t)
	_, callerKey, _ := ed25519.GenerateKey(rand.Reader)
	caller := amp.Identity{DID: amp.DIDKey(callerKey.Public().(ed25519.PublicKey)), SigningKey: callerKey}
	cfg := writeConfig(t, map[string]any{
		"allow": []string{caller.DID + "=org.example."},
		"handlers": map[string]any{
			"org.example.translate.text:2.1.0": map[string]any{"command": []string{"/bin/sh", "-c",
				`cat >/dev/null; printf '{"text":"x","detected_source":"en"}'`}},
			"org.example.translate.text:2.0.0": map[string]any{"command": []string{"/bin/sh", "-c",
				`cat >/dev/null; head -c 1073741824 /dev/zero`}},
		},
	})
	cmd := exec.Command(bin, "serve", "--json", "--listen", "127.0.0.1:0", "--db", db, "--key", key, "--config", cfg, "--log-level", "error")
	stdout, _ := cmd.StdoutPipe()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	var doc struct {
		Listening string `json:"listening"`
		DID       string `json:"did"`
	}
	if err := json.NewDecoder(bufio.NewReader(stdout)).Decode(&doc); err != nil {
		t.Fatalf("no listening document: %v %s", err, stderr.String())
	}
	url := doc.Listening + "/amp/v1/messages"

	var mu sync.Mutex
	counts := map[string]int{}
	count := func(k string) { mu.Lock(); counts[k]++; mu.Unlock() }
	var failures atomic.Int64
	fail := func(format string, args ...any) {
		if failures.Add(1) <= 10 {
			t.Errorf(format, args...)
		}
	}
	client := &http.Client{Timeout: 2 * time.Minute}
	post := func(body []byte) (int, []byte) {
		resp, err := client.Post(url, "application/cbor", bytes.NewReader(body))
		if err != nil {
			return 0, nil
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
		return resp.StatusCode, b
	}
	seal := func(id amp.Identity, typ amp.Type, body []byte) []byte {
		s, err := amp.NewSender(amp.SenderConfig{Identity: id, Rand: rand.Reader, Now: time.Now})
		if err != nil {
			t.Fatal(err)
		}
		_, b, err := s.Seal(context.Background(), amp.Draft{Type: typ, To: amp.To(doc.DID), Body: body})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	invoke := func(version string) []byte {
		p, _ := amp.Marshal(map[string]any{"text": "hello", "target": "fr"})
		b, _ := capability.Invoke{ID: capability.ID{Name: "org.example.translate.text", Version: mustParseVersion(t, version)}, Params: p}.Encode()
		return b
	}
	recv, _ := amp.NewReceiver(amp.ReceiverConfig{Now: time.Now})
	replyType := func(b []byte) (amp.Type, []byte) {
		m, err := recv.Receive(context.Background(), b)
		if err != nil {
			return 0, nil
		}
		return m.Type, m.Body
	}
	bomb := soakBomb(250)
	signedBomb := func() []byte {
		// The largest a sender can sign: within the message's item budget
		// (1,048,576), three times the params' (262,144).
		b, _ := capability.Invoke{ID: capability.ID{Name: "org.example.translate.text", Version: mustParseVersion(t, "2.1.0")}, Params: soakBomb(12)}.Encode()
		return seal(caller, amp.TypeCapInvoke, b)
	}()

	end := time.Now().Add(d)
	var wg sync.WaitGroup
	worker := func(f func(i int)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; time.Now().Before(end); i++ {
				f(i)
			}
		}()
	}
	for w := 0; w < 6; w++ { // valid load
		worker(func(i int) {
			msg := seal(caller, amp.TypeCapInvoke, invoke("2.1.0"))
			if i%7 == 0 {
				msg = seal(caller, amp.TypePing, nil)
			}
			status, b := post(msg)
			if status == http.StatusServiceUnavailable {
				count("valid: 503 busy")
				return
			}
			typ, body := replyType(b)
			switch {
			case status == 200 && typ == amp.TypePong:
				count("valid: ping ok")
			case status == 200 && typ == amp.TypeCapResult:
				if r, err := capability.DecodeResult(body); err != nil || r.Status != capability.StatusSuccess {
					fail("valid invocation failed: %+v %v", r, err)
					count("valid: FAILED")
					return
				}
				count("valid: invoke ok")
				if i%10 == 0 { // a replay must be byte-identical
					if s2, b2 := post(msg); s2 == 200 && !bytes.Equal(b2, b) {
						fail("a replay got different bytes")
					} else if s2 == 200 {
						count("valid: replay identical")
					}
				}
			default:
				fail("valid request: status %d, reply %v", status, typ)
				count("valid: FAILED")
			}
		})
	}
	worker(func(i int) { // a handler flooding its stdout: a 5001, never memory
		status, b := post(seal(caller, amp.TypeCapInvoke, invoke("2.0.0")))
		typ, body := replyType(b)
		if r, err := capability.DecodeResult(body); status == 200 && typ == amp.TypeCapResult && err == nil && r.Error != nil && r.Error.Code == amp.CodeInternalError {
			count("flood handler: 5001")
		} else if status == http.StatusServiceUnavailable {
			count("flood handler: 503 busy")
		} else {
			fail("flooding handler: status %d", status)
		}
	})
	hostile := []struct {
		name string
		want []int
		msg  func() []byte
	}{
		{"forged signature", []int{400}, func() []byte {
			m := seal(caller, amp.TypeCapInvoke, invoke("2.1.0"))
			m[len(m)-1] ^= 1 // the last byte is in sig (the envelope's last key)
			return m
		}},
		{"garbage", []int{400}, func() []byte { b := make([]byte, 4096); rand.Read(b); return b }},
		{"unauthenticated 16 MiB bomb", []int{400, 503}, func() []byte { return bomb }},
		{"signed 786,432-item bomb", []int{200, 503}, func() []byte { return signedBomb }},
		{"fresh did:key ping", []int{200, 503}, func() []byte {
			_, k, _ := ed25519.GenerateKey(rand.Reader)
			return seal(amp.Identity{DID: amp.DIDKey(k.Public().(ed25519.PublicKey)), SigningKey: k}, amp.TypePing, nil)
		}},
		{"fresh did:key invoke", []int{200, 503}, func() []byte {
			_, k, _ := ed25519.GenerateKey(rand.Reader)
			return seal(amp.Identity{DID: amp.DIDKey(k.Public().(ed25519.PublicKey)), SigningKey: k}, amp.TypeCapInvoke, invoke("2.1.0"))
		}},
		{"17 MiB body", []int{413}, func() []byte { return make([]byte, 17<<20) }},
	}
	for _, h := range hostile {
		h := h
		worker(func(i int) {
			status, _ := post(h.msg())
			for _, w := range h.want {
				if status == w {
					count(fmt.Sprintf("hostile %s: %d", h.name, status))
					return
				}
			}
			count(fmt.Sprintf("hostile %s: UNEXPECTED %d", h.name, status))
			fail("%s: status %d, want one of %v", h.name, status, h.want)
		})
	}
	wg.Wait()

	status, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", cmd.Process.Pid))
	var hwm, rss string
	for _, line := range strings.Split(string(status), "\n") {
		if strings.HasPrefix(line, "VmHWM:") {
			hwm = strings.TrimSpace(strings.TrimPrefix(line, "VmHWM:"))
		}
		if strings.HasPrefix(line, "VmRSS:") {
			rss = strings.TrimSpace(strings.TrimPrefix(line, "VmRSS:"))
		}
	}
	fi, err := os.Stat(db + ".ledger.wal")
	if err != nil {
		t.Fatal(err)
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var report strings.Builder
	fmt.Fprintf(&report, "soak %s: agent peak RSS (VmHWM) %s, RSS now %s, ledger file %d bytes, unexpected answers %d\n", d, hwm, rss, fi.Size(), failures.Load())
	for _, k := range keys {
		fmt.Fprintf(&report, "  %-45s %d\n", k, counts[k])
	}
	fmt.Print(report.String())
	if cmd.ProcessState != nil {
		t.Fatal("the agent exited during the soak")
	}
	cmd.Process.Signal(os.Interrupt)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("agent exit: %v\n%s", err, stderr.String())
	}
}

func mustParseVersion(t *testing.T, s string) capability.Version {
	t.Helper()
	v, err := capability.ParseVersion(s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// soakBomb is a CBOR map of n arrays of 65,536 zeros (no envelope fields).
func soakBomb(n int) []byte {
	arr := append([]byte{0x9a, 0x00, 0x01, 0x00, 0x00}, make([]byte, 65536)...)
	out := []byte{0xb8, byte(n)}
	for i := 0; i < n; i++ {
		out = append(out, 0x63, 'k', byte('a'+i/26%26), byte('a'+i%26))
		out = append(out, arr...)
	}
	return out
}

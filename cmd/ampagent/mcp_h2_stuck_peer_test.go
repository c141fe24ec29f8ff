//go:build unix

package main

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMCPOverHTTP2PeerThatStopsReadingGivesItsSlotBack: `ampagent serve
// --mcp-listen` with --mcp-tls-cert speaks HTTP/2, and there a POST's
// rated answer (MCP-43) passing its write deadline resets only its
// stream: the RST_STREAM frame waits behind the answer's DATA frames
// stuck in the connection's write, so the handler never returns. Attack:
// a token holder opens an HTTP/2 connection with the largest
// flow-control windows (stream and connection), posts a tools/call whose
// answer is about 14 MiB (a 4 MiB result, carried three times: the
// structured content, its text, the signed CAP_RESULT), far more than
// the loopback socket buffers hold (its own receive buffer is 4 KiB;
// about 2.7 MiB of the answer got through here), and from then on reads
// nothing. Its POST slot (here the principal's only one: --max-in-flight
// 4, --peer-share 4) was held for as long as the peer kept the
// connection, and the principal's every other POST was 503 busy. serve's
// MCP server now closes a connection to which nothing could be written
// for admission.FrameGrace (HTTP2Config.WriteByteTimeout, MCP-50): the
// handler's write fails, the slot comes back and a ping of the same
// session is served. The bound: the connection is closed FrameGrace (5
// s) after its last byte was written (about 5 s here), and closing a TLS
// connection whose send buffer is full may wait up to its own 5 s for
// the close_notify alert: 10 s at most. What is checked are states, not
// times: the answer started (HEADERS, status 200) and the slot was held
// (a ping 503), then the ping is 200, the stuck connection ends (EOF or
// reset) and its answer never ended (no END_STREAM). Without the
// WriteByteTimeout the ping stays 503 and the test fails at its 60 s
// hang guard (room for a loaded machine).
func TestMCPOverHTTP2PeerThatStopsReadingGivesItsSlotBack(t *testing.T) {
	const (
		principal = "did:web:h2.example.org"
		token     = "h2-token-0123456789abcdef0123456789abcdef"
		tool      = "org.example.translate.text_2.1.0"
		resultLen = 4 << 20
	)
	db, key := serveStore(t)
	dir := t.TempDir()
	script := filepath.Join(dir, "big.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\ncat >/dev/null\nprintf '{\"text\":\"'\nhead -c "+strconv.Itoa(resultLen)+
		" /dev/zero | tr '\\000' a\nprintf '\",\"detected_source\":\"en\"}'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := writeConfig(t, map[string]any{"allow": []string{principal + "=org.example."},
		"handlers": map[string]any{"org.example.translate.text:2.1.0": map[string]any{"command": []string{script}, "max_result_bytes": 8 << 20}}})
	tokens := writeFile(t, "tokens", principal+" "+token+"\n")
	cert, tlsKey := tlsFiles(t)
	doc := startServeDoc(t, "--db", db, "--key", key, "--config", cfg, "--max-in-flight", "4", "--peer-share", "4",
		"--mcp-listen", "127.0.0.1:0", "--mcp-token-file", tokens, "--mcp-tls-cert", cert, "--mcp-tls-key", tlsKey)
	mcpURL, _ := doc["mcp"].(string)
	u, err := url.Parse(mcpURL)
	if err != nil || u.Scheme != "https" {
		t.Fatalf("no https mcp URL: %v", doc)
	}
	pem, err := os.ReadFile(cert)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pem)
	tlsCfg := &tls.Config{RootCAs: roots, ServerName: "127.0.0.1"}

	// The session, over HTTP/1.1 (a new connection each request).
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true, TLSClientConfig: tlsCfg}}
	post := func(session, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, mcpURL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
		}
		res, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		io.Copy(io.Discard, res.Body)
		return res.StatusCode, res.Header.Get("Mcp-Session-Id")
	}
	code, session := post("", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"h2","version":"1"}}}`)
	if code != http.StatusOK || session == "" {
		t.Fatalf("initialize: %d, session %q", code, session)
	}
	if code, _ := post(session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); code != http.StatusAccepted {
		t.Fatalf("notifications/initialized: %d", code)
	}
	ping := func() int {
		code, _ := post(session, `{"jsonrpc":"2.0","id":9,"method":"ping"}`)
		if code != http.StatusOK && code != http.StatusServiceUnavailable {
			t.Fatalf("ping: %d, want 200 or 503 busy", code)
		}
		return code
	}
	if got := ping(); got != http.StatusOK {
		t.Fatalf("a ping with no request in flight: %d, want 200", got)
	}

	call := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"` + tool + `","arguments":{"text":"hello","target":"de"}}}`
	c := mcpStallH2(t, u.Host, tlsCfg, [][2]string{{"authorization", "Bearer " + token}, {"mcp-session-id", session},
		{"mcp-protocol-version", "2025-06-18"}}, call)
	t.Cleanup(func() { c.Close() }) // before serve stops, which waits for the handler
	// From here the peer reads nothing. Its POST holds the principal's
	// one slot: a ping is refused busy.
	held := false
	for range 50 {
		if ping() == http.StatusServiceUnavailable {
			held = true
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !held {
		t.Fatal("the stuck HTTP/2 answer never held the principal's POST slot (the test proves nothing)")
	}
	start := time.Now()
	busy := 0
	for ping() != http.StatusOK {
		busy++
		if time.Since(start) > 60*time.Second {
			t.Fatalf("an HTTP/2 peer that reads none of its tools/call answer still holds the principal's POST slot 60 s on (%d pings refused busy): "+
				"the stream's reset waits behind the stuck answer and the server never closes the connection (no HTTP2Config.WriteByteTimeout)", busy)
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("slot back %v after it was seen held (%d pings refused busy)", time.Since(start).Round(100*time.Millisecond), busy)

	// The server closed the connection: what the kernels still held
	// arrives, then the end; the answer never ended.
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	var got int64
	for {
		typ, flags, stream, n, err := mcpH2ReadFrame(c, nil)
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				t.Fatalf("the stuck connection is still open 30 s after the slot came back (%d answer bytes read)", got)
			}
			t.Logf("the stuck connection ended (%v) after %d answer bytes", err, got)
			break
		}
		if typ == 0x0 && stream == 1 {
			got += int64(n)
			if flags&0x1 != 0 {
				t.Fatalf("the peer got the whole answer (%d bytes): it never stalled (the test proves nothing)", got)
			}
		}
	}
}

// mcpStallH2 opens an HTTP/2 connection over TLS to addr with a 4 KiB
// socket receive buffer, opens the largest flow-control windows (stream
// and connection), posts body to MCPPath with the headers given, and
// reads the server's frames up to the answer's HEADERS, which must say
// 200 (the answer is being written); from then on it reads nothing. The
// standard library's client reads every frame that comes (it buffers up
// to its window), so the frames are written by hand.
func mcpStallH2(t *testing.T, addr string, cfg *tls.Config, headers [][2]string, body string) *tls.Conn {
	t.Helper()
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4<<10) })
		if err != nil {
			return err
		}
		return serr
	}}
	raw, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	cfg = cfg.Clone()
	cfg.NextProtos = []string{"h2"}
	c := tls.Client(raw, cfg)
	c.SetDeadline(time.Now().Add(30 * time.Second))
	fail := func(format string, args ...any) {
		t.Helper()
		c.Close()
		t.Fatalf(format, args...)
	}
	if err := c.Handshake(); err != nil || c.ConnectionState().NegotiatedProtocol != "h2" {
		fail("no HTTP/2 over TLS: %v %q", err, c.ConnectionState().NegotiatedProtocol)
	}
	const maxWindow = 1<<31 - 1
	var settings [6]byte
	binary.BigEndian.PutUint16(settings[:], 0x4) // SETTINGS_INITIAL_WINDOW_SIZE
	binary.BigEndian.PutUint32(settings[2:], maxWindow)
	var grow [4]byte
	binary.BigEndian.PutUint32(grow[:], maxWindow-65535)
	out := []byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
	out = mcpH2Frame(out, 0x4, 0, 0, settings[:]) // SETTINGS
	out = mcpH2Frame(out, 0x8, 0, 0, grow[:])     // WINDOW_UPDATE, connection
	if _, err := c.Write(out); err != nil {
		fail("%v", err)
	}
	// The server's frames up to its SETTINGS, acknowledged.
	for {
		typ, flags, _, _, err := mcpH2ReadFrame(c, nil)
		if err != nil {
			fail("reading the server's SETTINGS: %v", err)
		}
		if typ == 0x4 && flags&0x1 == 0 {
			break
		}
	}
	// HPACK: each field a literal without indexing, new name, no Huffman.
	var block []byte
	for _, f := range append([][2]string{{":method", "POST"}, {":scheme", "https"}, {":authority", addr}, {":path", MCPPath},
		{"content-type", "application/json"}, {"accept", "application/json, text/event-stream"},
		{"content-length", strconv.Itoa(len(body))}}, headers...) {
		block = append(block, 0)
		block = mcpHPACKString(mcpHPACKString(block, f[0]), f[1])
	}
	out = mcpH2Frame(nil, 0x4, 0x1, 0, nil)          // SETTINGS ACK
	out = mcpH2Frame(out, 0x1, 0x4, 1, block)        // HEADERS, END_HEADERS
	out = mcpH2Frame(out, 0x0, 0x1, 1, []byte(body)) // DATA, END_STREAM
	if _, err := c.Write(out); err != nil {
		fail("%v", err)
	}
	// The answer's HEADERS: the server's HPACK encoder writes :status
	// first, and 200 as the static table's entry 8 (0x88).
	for {
		var first []byte
		typ, _, stream, _, err := mcpH2ReadFrame(c, &first)
		if err != nil {
			fail("no answer to the tools/call: %v", err)
		}
		if typ == 0x3 && stream == 1 {
			fail("the tools/call's stream was reset")
		}
		if typ == 0x1 && stream == 1 {
			if len(first) == 0 || first[0] != 0x88 {
				fail("the tools/call was not answered 200 (header block % x)", first)
			}
			break
		}
	}
	c.SetDeadline(time.Time{})
	return c
}

// mcpH2Frame appends an HTTP/2 frame of type typ with flags on stream to b.
func mcpH2Frame(b []byte, typ, flags byte, stream uint32, payload []byte) []byte {
	n := len(payload)
	b = append(b, byte(n>>16), byte(n>>8), byte(n), typ, flags)
	b = binary.BigEndian.AppendUint32(b, stream)
	return append(b, payload...)
}

// mcpHPACKString appends s as an HPACK string literal (no Huffman) to b.
func mcpHPACKString(b []byte, s string) []byte {
	n := len(s)
	if n < 127 {
		b = append(b, byte(n))
	} else {
		b = append(b, 127)
		for n -= 127; n >= 128; n >>= 7 {
			b = append(b, byte(n%128)|0x80)
		}
		b = append(b, byte(n))
	}
	return append(b, s...)
}

// mcpH2ReadFrame reads one frame from r and returns its header and
// payload length; the payload is discarded, or, when first is not nil,
// its first bytes (up to 16) are kept there. A HEADERS frame's padding
// and priority fields are not stepped over: the server sends neither.
func mcpH2ReadFrame(r io.Reader, first *[]byte) (typ, flags byte, stream uint32, n int, err error) {
	var hdr [9]byte
	if _, err = io.ReadFull(r, hdr[:]); err != nil {
		return
	}
	n = int(hdr[0])<<16 | int(hdr[1])<<8 | int(hdr[2])
	typ, flags, stream = hdr[3], hdr[4], binary.BigEndian.Uint32(hdr[5:])&(1<<31-1)
	rest := int64(n)
	if first != nil {
		*first = make([]byte, min(n, 16))
		if _, err = io.ReadFull(r, *first); err != nil {
			return
		}
		rest -= int64(len(*first))
	}
	if _, err = io.CopyN(io.Discard, r, rest); err != nil {
		err = fmt.Errorf("frame payload: %w", err)
	}
	return
}

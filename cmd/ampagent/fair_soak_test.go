//go:build linux

package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/transport/ampstcp"
)

// TestFairSoak is not part of the normal suite: it runs only when
// AMPAGENT_FAIR is a message count (AMPAGENT_FAIR_ROUNDS: how many rounds,
// default 3), e.g.
//
//	AMPAGENT_FAIR=4000 go test ./cmd/ampagent -run TestFairSoak -v -timeout 10m
//
// It builds ampagent, runs `ampagent serve --listen-tcp` as a separate
// process, and measures, in each round, how long a valid caller on
// 127.0.0.1 takes to get that many signed PINGs answered over AMPS/TCP
// (16 in flight on one connection), alone and under each flood from other
// loopback addresses: validly signed PINGs from fresh did:keys and PINGs
// with a bad signature (127.0.0.2, four connections of 64 in flight
// each, every message prepared beforehand so that the flood costs the
// shared cores little), and slow TCP frames (127.0.0.2 to 127.0.0.5,
// each declaring 16 MiB and trickling 512 bytes every 62 ms, 32 KiB/s in
// all, reconnecting when cut off). It prints the caller's throughput
// alone and under each flood as a ratio of the solo one, per round and
// the median (docs/PERFORMANCE.md, P13). It asserts nothing about the
// figures.
func TestFairSoak(t *testing.T) {
	m, err := strconv.Atoi(os.Getenv("AMPAGENT_FAIR"))
	if err != nil || m <= 0 {
		t.Skip("set AMPAGENT_FAIR=4000 to run the fairness soak")
	}
	rounds := 3
	if r, err := strconv.Atoi(os.Getenv("AMPAGENT_FAIR_ROUNDS")); err == nil && r > 0 {
		rounds = r
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "ampagent")
	if b := os.Getenv("AMPAGENT_FAIR_BIN"); b != "" {
		bin = b // another build, to compare
	} else if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	db, key := serveStore(t)
	cfg := writeConfig(t, map[string]any{"allow": []string{"*=org.example."}})
	cmd := exec.Command(bin, "serve", "--json", "--listen", "127.0.0.1:0", "--listen-tcp", "127.0.0.1:0",
		"--db", db, "--key", key, "--config", cfg, "--log-level", "error")
	stdout, _ := cmd.StdoutPipe()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	var doc struct {
		TCP string `json:"listening_tcp"`
		DID string `json:"did"`
	}
	if err := json.NewDecoder(bufio.NewReader(stdout)).Decode(&doc); err != nil {
		t.Fatalf("no listening document: %v %s", err, stderr.String())
	}
	addr := strings.TrimPrefix(doc.TCP, "amp://")

	ping := func(id amp.Identity) []byte {
		s, err := amp.NewSender(amp.SenderConfig{Identity: id, Rand: rand.Reader, Now: time.Now})
		if err != nil {
			t.Fatal(err)
		}
		_, b, err := s.Seal(context.Background(), amp.Draft{Type: amp.TypePing, To: amp.To(doc.DID)})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	newIdentity := func() amp.Identity {
		_, k, _ := ed25519.GenerateKey(rand.Reader)
		return amp.Identity{DID: amp.DIDKey(k.Public().(ed25519.PublicKey)), SigningKey: k}
	}
	// Everything is signed before the clock starts, on both cores.
	prepare := func(n int, f func() []byte) [][]byte {
		out := make([][]byte, n)
		var wg sync.WaitGroup
		for w := 0; w < 2; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := w; i < n; i += 2 {
					out[i] = f()
				}
			}()
		}
		wg.Wait()
		return out
	}
	caller := newIdentity()
	valid := prepare(4*rounds*m, func() []byte { return ping(caller) })
	// The flood answers faster than the caller: 20 fresh messages for each
	// of the caller's, and the report says when they ran out (then the
	// rest are duplicates, answered from the ledger).
	fresh := prepare(20*rounds*m, func() []byte { return ping(newIdentity()) })
	var freshNext atomic.Int64
	bad := prepare(2000, func() []byte {
		b := ping(caller)
		b[len(b)-1] ^= 1 // the last byte is in sig (the envelope's last key)
		return b
	})

	floods := []struct {
		name string
		run  func(stop <-chan struct{}, sent *atomic.Int64)
	}{
		{"fresh did:keys", func(stop <-chan struct{}, sent *atomic.Int64) {
			pipelined(t, addr, "127.0.0.2", 4, 64, stop, sent, func(int64) []byte { return fresh[int(freshNext.Add(1)-1)%len(fresh)] })
		}},
		{"bad signatures", func(stop <-chan struct{}, sent *atomic.Int64) {
			pipelined(t, addr, "127.0.0.2", 4, 64, stop, sent, func(i int64) []byte { return bad[int(i)%len(bad)] })
		}},
		{"slow TCP frames", func(stop <-chan struct{}, sent *atomic.Int64) {
			var wg sync.WaitGroup
			for h := 2; h <= 5; h++ {
				for range 2 {
					wg.Add(1)
					go func() { defer wg.Done(); trickle(addr, fmt.Sprintf("127.0.0.%d", h), stop, sent) }()
				}
			}
			wg.Wait()
		}},
	}
	callerConns, callerWindow := 1, 16
	if w := strings.Split(os.Getenv("AMPAGENT_FAIR_CALLER"), "x"); len(w) == 2 {
		callerConns, _ = strconv.Atoi(w[0])
		callerWindow, _ = strconv.Atoi(w[1])
	}
	next := 0
	// caller16 is the valid caller's run: m answers, or as many as came
	// in 20 s; it returns its throughput.
	caller16 := func() float64 {
		msgs := valid[next : next+m]
		next += m
		var got atomic.Int64
		stop := make(chan struct{})
		start := time.Now()
		done := make(chan struct{})
		go func() {
			pipelined(t, addr, "127.0.0.1", callerConns, callerWindow, stop, &got, func(i int64) []byte {
				if i >= int64(len(msgs)) {
					return nil
				}
				return msgs[i]
			})
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
		}
		d := time.Since(start)
		close(stop)
		<-done
		return float64(got.Load()) / d.Seconds()
	}
	ratios := make([][]float64, len(floods))
	var report strings.Builder
	for r := 0; r < rounds; r++ {
		solo := caller16()
		line := fmt.Sprintf("round %d: alone %.0f/s", r+1, solo)
		for i, f := range floods {
			stop := make(chan struct{})
			var sent atomic.Int64
			fdone := make(chan struct{})
			go func() { f.run(stop, &sent); close(fdone) }()
			time.Sleep(500 * time.Millisecond) // the flood settles
			rate := caller16()
			close(stop)
			<-fdone
			ratios[i] = append(ratios[i], rate/solo)
			line += fmt.Sprintf("; %s %.0f/s = %.0f %% (flood: %d answered or cut)", f.name, rate, 100*rate/solo, sent.Load())
			time.Sleep(time.Second) // what the flood left drains
		}
		fmt.Println(line)
		report.WriteString(line + "\n")
	}
	if n := freshNext.Load(); n > int64(len(fresh)) {
		fmt.Fprintf(&report, "the fresh did:key flood ran out of fresh messages: %d sent of %d prepared (the rest were duplicates)\n", n, len(fresh))
	}
	for i, f := range floods {
		rs := append([]float64(nil), ratios[i]...)
		sort.Float64s(rs)
		fmt.Fprintf(&report, "median under %s: %.0f %% of alone\n", f.name, 100*rs[len(rs)/2])
	}
	fmt.Print(report.String())
	cmd.Process.Signal(os.Interrupt)
	cmd.Wait()
}

// pipelined sends next(0), next(1), ... as AMP_MESSAGE frames on conns
// connections from the loopback address from, at most window unanswered on
// each, until next returns nil and every answer came, or stop closes; each
// answer (a MESSAGE or an ERROR frame) adds 1 to answered. A connection
// that ends is dialled again.
func pipelined(t *testing.T, addr, from string, conns, window int, stop <-chan struct{}, answered *atomic.Int64, next func(int64) []byte) {
	var seq atomic.Int64
	var wg sync.WaitGroup
	for range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if finished := pipelineOnce(addr, from, window, stop, answered, &seq, next); finished {
					return
				}
			}
		}()
	}
	wg.Wait()
}

// pipelineOnce is one connection of pipelined; true when next ran out and
// every answer came.
func pipelineOnce(addr, from string, window int, stop <-chan struct{}, answered, seq *atomic.Int64, next func(int64) []byte) bool {
	c, err := (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}).Dial("tcp", addr)
	if err != nil {
		time.Sleep(50 * time.Millisecond)
		return false
	}
	defer c.Close()
	go func() { <-stop; c.Close() }()
	br := bufio.NewReaderSize(c, 64<<10)
	c.Write(ampstcp.AppendFrame(nil, ampstcp.FrameHandshake, ampstcp.EncodeHandshakeRequest(ampstcp.HandshakeRequest{Version: 1, MaxMsgSize: 1 << 20})))
	if f, err := ampstcp.ReadFrame(br, 1<<20); err != nil || f.Type != ampstcp.FrameHandshake {
		time.Sleep(50 * time.Millisecond)
		return false
	}
	slots := make(chan struct{}, window)
	var outstanding atomic.Int64
	var ranOut atomic.Bool
	go func() {
		bw := bufio.NewWriterSize(c, 64<<10)
		for {
			select {
			case slots <- struct{}{}:
			case <-stop:
				return
			}
			msg := next(seq.Add(1) - 1)
			if msg == nil {
				bw.Flush()
				ranOut.Store(true)
				if outstanding.Load() == 0 {
					c.Close() // the reader may be waiting for nothing
				}
				return
			}
			outstanding.Add(1)
			if _, err := bw.Write(ampstcp.AppendFrame(nil, ampstcp.FrameMessage, msg)); err != nil {
				return
			}
			if len(slots) == cap(slots) || bw.Buffered() > 32<<10 {
				if bw.Flush() != nil {
					return
				}
			}
		}
	}()
	for {
		f, err := ampstcp.ReadFrame(br, 1<<24)
		if err != nil {
			return ranOut.Load() && outstanding.Load() == 0
		}
		if f.Type == ampstcp.FrameError && os.Getenv("AMPAGENT_FAIR_DEBUG") != "" {
			if ef, err := ampstcp.DecodeErrorFrame(f.Payload); err == nil {
				fmt.Printf("%s: error frame %d %s\n", from, ef.Error.Code, ef.Error.Message)
			}
		}
		if f.Type == ampstcp.FrameMessage || f.Type == ampstcp.FrameError {
			answered.Add(1)
			<-slots
			if outstanding.Add(-1) == 0 && ranOut.Load() {
				return true
			}
		}
	}
}

// trickle declares 16 MiB frames from the loopback address from and sends
// 512 bytes of them every 62 ms (8 KiB/s), reconnecting when cut off, until
// stop closes; each cut adds 1 to cut.
func trickle(addr, from string, stop <-chan struct{}, cut *atomic.Int64) {
	for {
		select {
		case <-stop:
			return
		default:
		}
		c, err := (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}).Dial("tcp", addr)
		if err != nil {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		go func() { <-stop; c.Close() }()
		c.Write(ampstcp.AppendFrame(nil, ampstcp.FrameHandshake, ampstcp.EncodeHandshakeRequest(ampstcp.HandshakeRequest{Version: 1, MaxMsgSize: 1 << 20})))
		c.Write(append(binary.BigEndian.AppendUint32(nil, 16<<20+1), ampstcp.FrameMessage))
		chunk := make([]byte, 512)
		for {
			select {
			case <-stop:
			case <-time.After(62 * time.Millisecond):
				if _, err := c.Write(chunk); err == nil {
					continue
				}
				cut.Add(1)
			}
			break
		}
		c.Close()
	}
}

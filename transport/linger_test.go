package transport

import (
	"net"
	"testing"
	"time"
)

// TestCloseAfterAnswerIsBoundedInTimeAndBytes: however much the peer
// keeps sending, closing a refused connection reads at most drain bytes
// and takes at most linger (threat: a peer that never stops sending
// holding the closing connection, or making the server read without
// end); a peer that closes ends it at once.
func TestCloseAfterAnswerIsBoundedInTimeAndBytes(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accept := func() net.Conn {
		c, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	// A peer that sends without end.
	flood := dialFrom(t, ln, "127.0.0.1")
	go func() {
		buf := make([]byte, 64<<10)
		for {
			if _, err := flood.Write(buf); err != nil {
				return
			}
		}
	}()
	s := accept()
	start := time.Now()
	CloseAfterAnswer(s, 300*time.Millisecond, 64<<10)
	// At least the linger; at most a loose bound (a loaded machine is
	// slow): without the linger the flood would hold it for ever.
	if took := time.Since(start); took < 250*time.Millisecond || took > waitTimeout {
		t.Fatalf("a flooding peer: closed after %v, want the linger (300ms)", took)
	}
	if _, err := s.Read(make([]byte, 1)); err == nil {
		t.Fatal("the connection is still open")
	}
	// A peer that reads its answer and closes.
	quiet := dialFrom(t, ln, "127.0.0.1")
	s = accept()
	go func() {
		time.Sleep(20 * time.Millisecond)
		quiet.Close()
	}()
	start = time.Now()
	CloseAfterAnswer(s, 2*waitTimeout, 64<<10)
	if took := time.Since(start); took > waitTimeout {
		t.Fatalf("a peer that closed: %v, want at once, not the linger (%v)", took, 2*waitTimeout)
	}
}

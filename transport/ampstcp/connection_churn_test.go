package ampstcp

import (
	"fmt"
	"net"
	"os"
	"runtime"
	"testing"
	"time"
)

// TestConnectionChurnLeavesNoGoroutinesOrFDs: a peer opens and closes
// connections in a loop (handshake, one message, then close; half of them
// reset), to leak a goroutine or a watcher per connection. After 1,000
// such connections the server's goroutines are back to what they were after
// the first 20 (the workers pool is warm by then), and so are its open
// file descriptors.
func TestConnectionChurnLeavesNoGoroutinesOrFDs(t *testing.T) {
	if testing.Short() {
		t.Skip("1,000 connections")
	}
	_, addr := startServer(t, echo(t, 0, nil), ServerOptions{})
	cycle := func(i int) {
		r := dialRaw(t, addr)
		if !r.handshake(1).Accepted {
			t.Fatal("handshake refused")
		}
		r.write(AppendFrame(nil, FrameMessage, fakeMessage(t, newID(), nil)))
		if _, err := r.frame(); err != nil {
			t.Fatalf("connection %d: no reply: %v", i, err)
		}
		if c, ok := r.c.(*net.TCPConn); ok && i%2 == 1 {
			c.SetLinger(0)
		}
		r.c.Close()
	}
	for i := range 20 {
		cycle(i)
	}
	base := goroutinesBackTo(runtime.NumGoroutine())
	time.Sleep(100 * time.Millisecond)
	base = goroutinesBackTo(base)
	fds := openFDs()
	for i := range 1000 {
		cycle(i)
	}
	if fds >= 0 {
		var now int
		for deadline := time.Now().Add(waitTimeout); ; time.Sleep(10 * time.Millisecond) {
			if now = openFDs(); now <= fds+2 || time.Now().After(deadline) {
				break
			}
		}
		if now > fds+2 {
			t.Fatalf("after 1,000 connections opened and closed, %d file descriptors are open, %d after the first 20: a leak per connection", now, fds)
		}
	}
	if n := goroutinesBackTo(base + 2); n > base+2 {
		buf := make([]byte, 1<<16)
		buf = buf[:runtime.Stack(buf, true)]
		t.Fatalf("after 1,000 connections opened and closed, %d goroutines run, %d after the first 20: a leak per connection\n%s",
			n, base, fmt.Sprint(string(buf[:min(len(buf), 4000)])))
	}
}

// openFDs counts this process's open file descriptors (-1 where
// /proc/self/fd cannot be read).
func openFDs() int {
	es, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	return len(es)
}

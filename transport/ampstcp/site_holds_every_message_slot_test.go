package ampstcp

import (
	"fmt"
	"net"
	"testing"
)

// TestOneSiteCannotHoldEveryMessageSlot: a host whose messages are slow
// to handle holds at most its share of the server-wide message slots
// (MaxPeerInFlight: "so that one host cannot hold every server-wide
// slot"). Attack: one host holding an IPv6 /48 (one interface can use
// all of it: TRANSPORT-14) sends from four of its /64s, each counted as
// a peer of its own with a quarter of the slots: together they hold every
// server-wide slot, and another caller's message is not even read (its
// read loop waits for a slot) for as long as the host's messages wait,
// also while they only wait in the agent's fair gate, which counts the
// /48 as one peer (TRANSPORT-9). The slots are now counted by site
// (admission.Network), as the connections are: the host holds one share
// and the other caller's message is handled.
func TestOneSiteCannotHoldEveryMessageSlot(t *testing.T) {
	ln, err := listenRemoteAs()
	if err != nil {
		t.Fatal(err)
	}
	h := &holdingHandler{release: make(chan struct{})}
	defer close(h.release)
	// A quarter of 8 (2) per peer; the /48 gets 4 connections, one per /64.
	srv := NewServer(h, ServerOptions{MaxConns: 16, MaxInFlight: 4, MaxInFlightTotal: 8})
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	addr := ln.Addr().String()
	for _, from := range siteFrom {
		r := dialRawFrom(t, addr, &net.TCPAddr{IP: net.ParseIP(from)})
		if !r.handshake(1).Accepted {
			t.Fatal("handshake refused")
		}
		for range 4 {
			r.write(AppendFrame(nil, FrameMessage, fakeMessage(t, newID(), nil)))
		}
	}
	// The site's messages fill what they may: its share (2), or, counted
	// by /64, every slot (8); more than 2 at once ends the wait early.
	eventually(t, "the site's messages did not fill their share", func() (bool, string) {
		n := h.running.Load()
		return n >= 2, fmt.Sprintf("%d in the handler", n)
	})
	caller := dialRawFrom(t, addr, &net.TCPAddr{IP: net.ParseIP(callerFrom)})
	if !caller.handshake(1).Accepted {
		t.Fatal("another caller's handshake refused")
	}
	caller.write(AppendFrame(nil, FrameMessage, fakeMessage(t, newID(), nil)))
	eventually(t, "another caller's message is not handled", func() (bool, string) {
		n := h.running.Load()
		return n == 3 || h.peakRunning.Load() > 3, fmt.Sprintf("%d in the handler", n)
	})
	if n := h.peakRunning.Load(); n != 3 {
		t.Fatalf("%d messages were handled at once, want the site's share of 2 and the other caller's 1: "+
			"one /48 holds the message slots of four /64s", n)
	}
}

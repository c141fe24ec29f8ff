package ampstcp

import (
	"context"
	"encoding/binary"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/admission"
)

// TestSlowTCPFrameGivesBackItsChargeWithinSeconds: a frame declaring
// 16 MiB and then trickled, steadily but below the minimum data rate,
// loses its charge as soon as it falls behind that rate after the grace,
// not once its whole declared size is overdue (threat: a 16 MiB frame
// trickled at 2 KiB/s kept its 16 MiB charge for the 30 s frame timeout;
// four hosts sending 32 KiB/s in all pinned the 64 MiB budget and a
// valid query took 26 s). Scaled down: a 1 MiB/s minimum rate and 200 ms
// of grace, so that the whole frame, at the old rule, had 16.2 s; the
// trickle sends 4 KiB every 20 ms (about 200 KiB/s). Measured in bytes,
// not time: the charge must be back before the trickle has sent 2 MiB
// (about 10 s of it; the old rule let it send over 3 MiB).
func TestSlowTCPFrameGivesBackItsChargeWithinSeconds(t *testing.T) {
	opts := ServerOptions{FrameTimeout: time.Minute, MinDataRate: 1 << 20, frameGrace: 200 * time.Millisecond}
	srv, addr := startServer(t, echo(t, 0, nil), opts)
	r := dialRaw(t, addr)
	r.c.SetDeadline(time.Now().Add(time.Minute))
	r.handshake(1)
	r.write(append(binary.BigEndian.AppendUint32(nil, 16<<20+1), FrameMessage))
	for srv.peerInFlightBytes("127.0.0.1") < 16<<20 {
		time.Sleep(5 * time.Millisecond)
	}
	var sent atomic.Int64
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		chunk := make([]byte, 4<<10)
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			if _, err := r.c.Write(chunk); err != nil {
				return
			}
			sent.Add(int64(len(chunk)))
		}
	}()
	for srv.peerInFlightBytes("127.0.0.1") != 0 || srv.InFlightBytes() != 0 {
		if n := sent.Load(); n >= 2<<20 {
			t.Fatalf("the trickled frame still holds %d bytes of its peer's share after %d bytes were sent", srv.peerInFlightBytes("127.0.0.1"), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("charge given back after %d bytes of the frame", sent.Load())
	if _, err := r.frame(); err == nil {
		t.Fatal("the connection is still open")
	}
}

// TestTCPMessagesNameTheirPeer: the context a message is handled in names
// its peer (admission.PeerOf), so that the agent's processing slots are
// handed out by peer (threat: without it every TCP caller is one peer to
// the agent's fair admission, and a flood over TCP takes every slot).
func TestTCPMessagesNameTheirPeer(t *testing.T) {
	peers := make(chan string, 1)
	h := HandlerFunc(func(ctx context.Context, msg []byte) ([]byte, error) {
		peers <- admission.PeerOf(ctx)
		return echo(t, 0, nil).Handle(ctx, msg)
	})
	_, addr := startServer(t, h, ServerOptions{})
	r := dialRawFrom(t, addr, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 42)})
	r.c.SetDeadline(time.Now().Add(waitTimeout))
	r.handshake(1)
	r.write(AppendFrame(nil, FrameMessage, fakeMessage(t, newID(), nil)))
	if f, err := r.frame(); err != nil || f.Type != FrameMessage {
		t.Fatalf("reply: %v %v", f.Type, err)
	}
	if p := <-peers; p != "127.0.0.42" {
		t.Fatalf("the handler saw peer %q, want 127.0.0.42", p)
	}
}

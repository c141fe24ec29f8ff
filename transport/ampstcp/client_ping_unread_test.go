package ampstcp

import (
	"bufio"
	"bytes"
	"context"
	"net"
	"testing"
	"time"
)

// TestAgentThatPingsWithoutReadingCannotHoldTheClientsReader: an agent
// takes a call's message, then reads nothing more and sends 60,000 PINGs
// of 256 bytes (15 MiB: more PONGs than the socket buffers, which grow
// to 4 MiB, the writer's 64 KiB buffer and its queue of 256 can hold),
// then the call's reply. Threat: the client's read loop
// queued each PONG on the connection's write queue and waited while it
// was full, so once the PONGs had filled the socket, the writer's buffer
// and the queue, the reader stopped: the reply behind the PINGs, and
// every other reply on the connection, was not read until the writer
// gave up (WriteTimeout, an hour here; 30 s by default per frame, for as
// long as an agent that takes a few bytes keeps it going). An agent that
// pings while its own reading waits on its replies (its in-flight caps)
// deadlocks with such a client. Now the reader never waits on the
// writer: a PING is answered when the answer to the one before it is
// written, else not; the call gets its reply.
func TestAgentThatPingsWithoutReadingCannotHoldTheClientsReader(t *testing.T) {
	const pings = 60000
	quit := make(chan struct{})
	a := newHostileAgent(t, func(i int, c net.Conn, br *bufio.Reader) {
		if !acceptHandshake(c, br) {
			return
		}
		f, err := ReadFrame(br, 16<<20)
		if err != nil || f.Type != FrameMessage {
			return
		}
		// From here the agent reads nothing (and keeps the connection
		// open: a close with the PONGs unread would reset it).
		bw := bufio.NewWriter(c)
		ping := bytes.Repeat([]byte{0xa5}, MaxPingPayload)
		for range pings {
			bw.Write(AppendFrame(nil, FramePing, ping))
		}
		bw.Write(AppendFrame(nil, FrameMessage, fakeMessage(t, newID(), topBytes(f.Payload, "id"))))
		bw.Flush()
		<-quit
	})
	t.Cleanup(func() { close(quit) }) // before the agent's own cleanup
	tr, err := NewTransport(a.url(), ClientOptions{WriteTimeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	id := newID()
	type answer struct {
		reply []byte
		err   error
	}
	got := make(chan answer, 1)
	go func() {
		reply, err := tr.RoundTrip(ctx, fakeMessage(t, id, nil))
		got <- answer{reply, err}
	}()
	var r answer
	select {
	case r = <-got:
	case <-time.After(waitTimeout):
		t.Fatalf("the call has not returned after %v", waitTimeout)
	}
	if r.err != nil {
		t.Fatalf("call: %v, want its reply, sent after %d PINGs by an agent that reads nothing "+
			"(5003: the client's reader waited to queue a PONG)", r.err, pings)
	}
	if !bytes.Equal(topBytes(r.reply, "reply_to"), id) {
		t.Fatal("the reply does not answer the call")
	}
}

package agent

import (
	"bytes"
	"context"
	"io"
	"strconv"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/admission"
	"github.com/ampbundle/ampbundle/amp"
)

// A message that waits for another message's outcome (a copy for its
// first copy, a STREAM_DATA for its stream's lock, a BATCH container for
// its items) must not keep its network active in the fair gate: the
// message it waits for is counted already. Parked (admission.Fair.Park),
// it made its network active with nothing inside, and the Inside rule
// then gave the caller whose one message waited in its handler no new
// message at all, with every slot free, until that handler ended
// (docs/SPEC-DECISIONS.md AGENT-34).

const (
	waiterCaller  = "192.0.2.1"
	waiterNetwork = "2001:db8:9::/64"
)

// TestCallerWhoseHandlerRunsIsNotHeldByAWaiterOfAnotherNetwork: with 8
// slots, the caller at 192.0.2.1 has one message waiting in its handler
// (a long invocation, or a STREAM_END the application is reading); from
// 2001:db8:9::/64 comes a message that waits for it: a copy of the
// invocation (an attacker replaying bytes it saw, or a dual-stack client
// retrying over its other address family), that copy as a BATCH's item,
// or the sender's next STREAM_DATA for the stream. Each of the caller's
// next 5 PINGs, given 1 s to find a slot, must be answered (before:
// refused 5003 slot_wait_ended once the waiter parked). Once the handler
// ends, the waiter gets its answer (a copy: the invocation's reply, byte
// for byte) and the gate gives 8 networks a slot each: nothing leaked.
func TestCallerWhoseHandlerRunsIsNotHeldByAWaiterOfAnotherNetwork(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, e *env, held func()) (first, waiter []byte)
	}{
		{"a copy of its invocation", func(t *testing.T, e *env, held func()) ([]byte, []byte) {
			_, inv := e.seal(e.caller, amp.TypeCapInvoke, invokeBody(t, waiterCap, goodParams))
			first := handleAt(e, waiterCaller, inv)
			held()
			copied := handleAt(e, waiterNetwork, inv)
			return <-first, <-copied
		}},
		{"a copy of its invocation in a BATCH", func(t *testing.T, e *env, held func()) ([]byte, []byte) {
			_, inv := e.seal(e.caller, amp.TypeCapInvoke, invokeBody(t, waiterCap, goodParams))
			first := handleAt(e, waiterCaller, inv)
			held()
			_, batch := e.batchOf(e.stranger, inv)
			replied := handleAt(e, waiterNetwork, batch)
			reply := <-first
			b, err := amp.DecodeBatch(e.receive(e.stranger, <-replied).Body)
			if err != nil || len(b.Items) != 1 {
				t.Fatalf("the BATCH's reply: %d items, %v; want 1", len(b.Items), err)
			}
			return reply, b.Items[0]
		}},
		{"its sender's next chunk, waiting for the stream", func(t *testing.T, e *env, held func()) ([]byte, []byte) {
			content := bytes.Repeat([]byte("x"), 32)
			e.send(amp.TypeStreamStart, startBody(t, "s", content, 16))
			for i, c := range chunks(content, 16) {
				e.send(amp.TypeStreamData, dataBody(t, "s", uint64(i), c))
			}
			_, end := e.seal(e.caller, amp.TypeStreamEnd, endBody(t, "s", content))
			first := handleAt(e, waiterCaller, end)
			held()
			_, data := e.seal(e.caller, amp.TypeStreamData, dataBody(t, "s", 0, content[:16]))
			next := handleAt(e, waiterNetwork, data)
			<-first
			<-next
			return nil, nil
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			started, release := make(chan struct{}), make(chan struct{})
			long := func() { close(started); <-release }
			e := newEnv(t,
				withHandler(waiterCap, func(ctx context.Context, p any) (any, error) { long(); return noop(ctx, p) }),
				withConfig(func(c *Config) {
					c.Streams = func(context.Context, StreamInfo, io.Reader) error { long(); return nil }
				}),
				smallResults())
			e.agent.cpu = admission.NewFair(8, admission.DefaultPeerQueue)
			refused := 0
			held := func() {
				<-started
				// The waiter is on its way; the caller's next PINGs, once
				// it may have reached its wait (as in
				// TestStreamCopiesCannotDeadlockTheCPUSlots).
				go func() {
					defer close(release)
					time.Sleep(100 * time.Millisecond)
					for range 5 {
						_, ping := e.seal(e.caller, amp.TypePing, nil)
						ctx, cancel := context.WithTimeout(admission.WithPeer(context.Background(), waiterCaller), time.Second)
						_, err := e.agent.Handle(ctx, ping)
						cancel()
						if err != nil {
							if amp.NameOf(err) != admission.ErrSlotWaitEnded {
								t.Errorf("a PING of the caller: %v", err)
							}
							refused++
						}
					}
				}()
			}
			first, waiter := tc.run(t, e, held)
			if refused > 0 {
				t.Errorf("%d of the caller's 5 PINGs were refused %s while its one message waited in its handler and a message of %s waited for it; want none",
					refused, admission.ErrSlotWaitEnded, waiterNetwork)
			}
			if first != nil && !bytes.Equal(first, waiter) {
				t.Errorf("the copy's answer differs from its first copy's")
			}
			// Every slot is free again: 8 networks, one message each.
			for i := range 8 {
				ctx, cancel := context.WithTimeout(admission.WithPeer(context.Background(), "198.51.100."+strconv.Itoa(i+1)), time.Second)
				_, done, err := e.agent.cpu.Enter(ctx)
				cancel()
				if err != nil {
					t.Fatalf("slot %d of 8 after the waiter ended: %v", i+1, err)
				}
				defer done()
			}
		})
	}
}

// waiterCap is the capability whose handler runs long in these tests.
const waiterCap = "org.agentries.code-review:2.1.0"

// handleAt hands msg to e's agent as sent from peer, in a goroutine; the
// reply comes on the returned channel (nil on an error, which fails t).
func handleAt(e *env, peer string, msg []byte) <-chan []byte {
	out := make(chan []byte, 1)
	go func() {
		reply, err := e.agent.Handle(admission.WithPeer(context.Background(), peer), msg)
		if err != nil {
			e.t.Errorf("a message from %s: %v", peer, err)
		}
		out <- reply
	}()
	return out
}

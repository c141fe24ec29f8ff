package agent

import (
	"context"
	"crypto/rand"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/ampbundle/ampbundle/admission"
	"github.com/ampbundle/ampbundle/amp"
)

// A network counts as a busy caller, whose linger holds the others to
// the Inside rule with nothing inside, after admission.FairLingerBusy
// (16) verified answers per 200 ms. The agent marked a message verified
// before it consulted its ledger, so bytes anyone saw, sent again at no
// signing cost, counted: a copy answered from the ledger, a message
// signed for another agent (refused before the ledger), a BATCH of
// copies (the container and each item), an invocation refused
// retryably and not recorded (asked again each time). Only a message
// whose outcome is recorded for its id counts now
// (docs/SPEC-DECISIONS.md AGENT-35).

// TestReplayedBytesDoNotMakeTheirNetworkABusyCaller: from
// 2001:db8:9::/64 the same bytes are sent again and again (32 times
// first, then on while the caller sends); the caller at 192.0.2.1 then
// sends 8 invocations of a long handler. Every one of them must start
// while the replays go on (at most 2,000 more); before, the replaying
// network lingered, and held the caller to 1 or 2 handlers running (its
// share against a busy caller with nothing or one message inside).
func TestReplayedBytesDoNotMakeTheirNetworkABusyCaller(t *testing.T) {
	const refusedCap = "org.agentries.code-review:2.0.0"
	for _, tc := range []struct {
		name     string
		replayed func(t *testing.T, e *env) []byte
	}{
		{"a PING answered from the ledger", func(t *testing.T, e *env) []byte {
			_, ping := e.seal(e.stranger, amp.TypePing, nil)
			return ping
		}},
		{"a message signed for another agent", func(t *testing.T, e *env) []byte {
			s, err := amp.NewSender(amp.SenderConfig{Identity: e.caller, Rand: rand.Reader, Now: e.clock.Now})
			must(t, err)
			_, b, err := s.Seal(context.Background(), amp.Draft{Type: amp.TypePing, To: amp.To(e.stranger.DID)})
			must(t, err)
			return b
		}},
		{"a BATCH of 16 copies", func(t *testing.T, e *env) []byte {
			_, ping := e.seal(e.stranger, amp.TypePing, nil)
			items := make([][]byte, admission.FairLingerBusy)
			for i := range items {
				items[i] = ping
			}
			_, batch := e.batchOf(e.stranger, items...)
			return batch
		}},
		{"an invocation refused retryably, not recorded", func(t *testing.T, e *env) []byte {
			_, inv := e.seal(e.caller, amp.TypeCapInvoke, invokeBody(t, refusedCap, goodParams))
			return inv
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var started atomic.Int64
			release := make(chan struct{})
			e := newEnv(t, withMemoryLedger(), smallResults(),
				withHandler(waiterCap, func(ctx context.Context, p any) (any, error) {
					started.Add(1)
					<-release
					return noop(ctx, p)
				}),
				withConfig(func(c *Config) {
					c.Admit = func(_ context.Context, in Admission) (func(), error) {
						if in.Capability == refusedCap {
							return nil, amp.Named(amp.CodeOverloaded, "programs_busy", "busy")
						}
						return nil, nil
					}
				}))
			e.agent.cpu = admission.NewFair(8, admission.DefaultPeerQueue)
			msg := tc.replayed(t, e)
			from := admission.WithPeer(context.Background(), waiterNetwork)
			replay := func() {
				if _, err := e.agent.Handle(from, msg); err != nil {
					t.Fatalf("a replay: %v", err)
				}
			}
			for range 2 * admission.FairLingerBusy {
				replay()
			}
			caller := admission.WithPeer(context.Background(), waiterCaller)
			var wg sync.WaitGroup
			for _, inv := range sealN(t, e, e.caller, 8, amp.TypeCapInvoke, invokeBody(t, waiterCap, goodParams)) {
				wg.Go(func() {
					if _, err := e.agent.Handle(caller, inv); err != nil {
						t.Errorf("an invocation of the caller: %v", err)
					}
				})
			}
			n := 0
			for ; started.Load() < 8 && n < 2000; n++ {
				replay()
			}
			got := started.Load()
			close(release)
			wg.Wait()
			if got < 8 {
				t.Fatalf("%d of the caller's 8 invocations started while %s sent the same bytes %d more times; want all 8",
					got, waiterNetwork, n)
			}
		})
	}
}

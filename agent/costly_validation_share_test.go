package agent

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/admission"
	"github.com/ampbundle/ampbundle/agent/ledger"
	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/capability"
)

// One peer's share of the agent's CPU slots (admission.Fair, 2 x
// GOMAXPROCS slots) against messages whose validation is expensive but
// within every per-message bound.

// costlyTree is a realistic recursive input schema (a tree of named
// nodes): the "ordinary tree" of offlineschema's BenchmarkValidationBudget,
// whose largest value within MaxValidationCost takes seconds of CPU to
// validate by design.
const costlyTree = `{"type":"object","required":["name"],"properties":{"name":{"type":"string"},"children":{"type":"array","items":{"$ref":"#"}}}}`

// costlyTreeID is a capability with that input schema, public: the
// policy lets any key ("*") invoke it, so that the attacker is a fresh
// did:key nobody named.
const costlyTreeID = "org.agentries.tree:1.0.0"

// withCostlyTree installs costlyTreeID (signed by the env's
// org.agentries publisher) with a handler that answers at once, opens it
// to every caller and gives the agent a memory ledger (no fsync in the
// victim's timings).
func withCostlyTree() envOption {
	return func(e *env) {
		e.importBundle(testBundle(e.t, seedKey(21), "org.agentries.tree", 1,
			map[string][2]string{costlyTreeID: {costlyTree, anyObject}}, nil))
		e.handlers[costlyTreeID] = func(context.Context, any) (any, error) { return map[string]any{}, nil }
		e.cfg.Policy = append(e.cfg.Policy.(Rules), Rule{Caller: "*", Prefix: "org.agentries.tree"})
		e.cfg.Ledger = memoryLedger(e.t, e.clock.Now, ledger.Limits{})
	}
}

// costlyParams is a tree of n leaves under the root, in groups of at
// most 50,000 (a CBOR array holds at most 65,536 items, amp.DefaultLimits):
// about 0.3 s of CPU to validate for n = 40,000 on a 2-core machine (the
// largest such tree within MaxValidationCost takes seconds), 20 bytes of
// CBOR a leaf.
func costlyParams(n int) map[string]any {
	var groups []any
	for n > 0 {
		k := min(n, 50_000)
		n -= k
		kids := make([]any, k)
		for i := range kids {
			kids[i] = map[string]any{"name": "n", "children": []any{}}
		}
		groups = append(groups, map[string]any{"name": "group", "children": kids})
	}
	return map[string]any{"name": "root", "children": groups}
}

// costlyTreeInput is the artifact key of costlyTreeID's input schema
// (testBundle's layout).
const costlyTreeInput = "capabilities/org.agentries.tree/1.0.0/input.schema.json"

// heldValidations holds every validation of costlyTreeID's params, inside
// its slot as a costly validation runs to its end, until release is
// closed: a validation that would take as long as the test lets it. held
// counts those that began, ended those that returned.
type heldValidations struct {
	release     chan struct{}
	held, ended atomic.Int64
}

// heldRegistry is the agent's registry with costlyTreeID's input schema
// held (heldValidations).
type heldRegistry struct {
	Registry
	h *heldValidations
}

func (r heldRegistry) Schema(ref capability.SchemaRef) (SchemaValidator, error) {
	v, err := r.Registry.Schema(ref)
	if err != nil || ref.ArtifactKey != costlyTreeInput {
		return v, err
	}
	return heldValidator{v, r.h}, nil
}

type heldValidator struct {
	SchemaValidator
	h *heldValidations
}

func (v heldValidator) Validate(x any) error {
	v.h.held.Add(1)
	defer v.h.ended.Add(1)
	<-v.h.release
	return v.SchemaValidator.Validate(x)
}

// withHeldValidations makes the agent's validations of costlyTreeID's
// params wait for h.release.
func withHeldValidations(h *heldValidations) envOption {
	return withConfig(func(c *Config) { c.registry = heldRegistry{Registry: storeRegistry{c.Store}, h: h} })
}

// sporadicVictim sends one simple invocation (code-review, a few bytes of
// params) from the victim's address and returns how long Handle took; the
// reply must be a successful CAP_RESULT.
func sporadicVictim(tb testing.TB, e *env) time.Duration {
	tb.Helper()
	_, msg := e.seal(e.caller, amp.TypeCapInvoke, invokeBody(tb, "org.agentries.code-review:2.1.0", goodParams))
	start := time.Now()
	raw, err := e.agent.Handle(admission.WithPeer(context.Background(), "127.0.0.1"), msg)
	d := time.Since(start)
	checkVictimReply(tb, e, raw, err)
	return d
}

// checkVictimReply fails tb unless the victim's invocation got a
// successful CAP_RESULT.
func checkVictimReply(tb testing.TB, e *env, raw []byte, err error) {
	tb.Helper()
	if err != nil {
		tb.Fatalf("the victim's invocation was refused: %v", err)
	}
	rep := e.receive(e.caller, raw)
	if rep.Type != amp.TypeCapResult || resultOf(tb, rep).Status != capability.StatusSuccess {
		tb.Fatalf("the victim's invocation did not succeed: %s", rep.Type.Name())
	}
}

// TestOnePeersCostlyValidationsLeaveASlotForASporadicCaller:
// the attack: one address (any fresh did:key; the capability is public)
// keeps 8 invocations in flight whose params cost about half a second of
// CPU each to validate (a fraction of what MaxValidationCost allows), all
// within every per-message bound. A well-behaved caller at another
// address sends one simple invocation every 200 ms.
//
// Before: the fair gate let a peer that is alone use every slot, and
// the sporadic caller does not linger (FairLingerBusy), so each of its
// invocations found all 2 x GOMAXPROCS slots held by the attacker's
// validations, which run to the end inside their slot (invokeInput), and
// waited for the first of them to finish: seconds for a sub-millisecond
// invocation on a 2-core machine (measured: 2.6 s; with 3 in flight, one
// slot left free, the same flood cost the caller 0.2 ms: CPU sharing is
// not the cause).
//
// Now: one slot is kept for a peer with nothing inside (the Reserve rule
// of admission.Fair, also when the caller's message comes back from its
// handler: Agent.idle), so the caller only shares the cores.
//
// What is checked, without timing: the flood's validations are held
// inside their slots until the test releases them (heldValidations), and
// the flood sends more messages than the slots and its address's queue
// (admission.DefaultPeerQueue) hold together, until some are refused
// peer_busy: every slot the flood may take is taken, the rest of it
// waits. The caller's invocation must then be answered with none of the
// flood's validations ended (before, it could not start until one did:
// the test releases the flood after a hang guard and reports how many
// ended first), and the flood must hold at most every slot but one. The
// time the CPU sharing costs the caller is BenchmarkSporadicCallerUnderCostlyValidationFlood's.
func TestOnePeersCostlyValidationsLeaveASlotForASporadicCaller(t *testing.T) {
	h := &heldValidations{release: make(chan struct{})}
	e := newEnv(t, withCostlyTree(), withHeldValidations(h))
	release := sync.OnceFunc(func() { close(h.release) })
	slots := 2 * runtime.GOMAXPROCS(0) // New's admission.NewFair
	flood := sealN(t, e, e.stranger, slots+admission.DefaultPeerQueue+16, amp.TypeCapInvoke, invokeBody(t, costlyTreeID, costlyParams(1)))
	from := admission.WithPeer(context.Background(), "127.0.0.2")
	var refused atomic.Int64
	var wg sync.WaitGroup
	for _, m := range flood {
		wg.Go(func() {
			_, err := e.agent.Handle(from, m)
			switch {
			case amp.NameOf(err) == admission.ErrPeerBusy:
				refused.Add(1)
			case err != nil:
				t.Errorf("a message of the flood: %v", err)
			}
		})
	}
	defer func() { release(); wg.Wait() }()
	// Hang guard: refusals come at once (the flood has more messages than
	// the slots and the queue), and the flood's first slots' validations
	// begin at once.
	for deadline := time.Now().Add(30 * time.Second); refused.Load() == 0 || h.held.Load() < int64(slots-1); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the flood was refused %d times and began %d validations, want at least 1 and %d", refused.Load(), h.held.Load(), slots-1)
		}
	}
	_, msg := e.seal(e.caller, amp.TypeCapInvoke, invokeBody(t, "org.agentries.code-review:2.1.0", goodParams))
	type answer struct {
		raw   []byte
		err   error
		ended int64 // the flood's validations ended before it
		took  time.Duration
	}
	answered := make(chan answer, 1)
	go func() {
		start := time.Now()
		raw, err := e.agent.Handle(admission.WithPeer(context.Background(), "127.0.0.1"), msg)
		answered <- answer{raw, err, h.ended.Load(), time.Since(start)}
	}()
	var a answer
	waited := false
	select {
	case a = <-answered:
	case <-time.After(30 * time.Second): // hang guard: held, it waits for the release
		waited = true
	}
	held := h.held.Load() // the flood's validations begun, all still held
	release()
	if waited {
		a = <-answered
	}
	checkVictimReply(t, e, a.raw, a.err)
	t.Logf("%d slots; the flood held %d validations, %d of its messages refused peer_busy; the caller answered after %v with %d of the flood's validations ended",
		slots, held, refused.Load(), a.took, a.ended)
	if a.ended > 0 {
		t.Fatalf("a sporadic caller's simple invocation was answered only after %d of the flood's held validations ended: it waited for the flood's validations to free a slot", a.ended)
	}
	if held > int64(slots-1) {
		t.Fatalf("the flood's validations held %d of the %d slots at once, want at most %d (one kept for a peer with nothing inside)", held, slots, slots-1)
	}
}

// BenchmarkSporadicCallerUnderCostlyValidationFlood times the sporadic
// caller of TestOnePeersCostlyValidationsLeaveASlotForASporadicCaller
// (one invocation, then 50 ms without one, so that it does not linger):
// alone, and while one address keeps 8 invocations in flight whose
// params take about half a second of CPU each to validate. ns/op is the
// caller's latency; compare flood=true with flood=false (before the
// Reserve rule: seconds against a fraction of a millisecond).
func BenchmarkSporadicCallerUnderCostlyValidationFlood(b *testing.B) {
	for _, flood := range []bool{false, true} {
		b.Run(fmt.Sprintf("flood=%v", flood), func(b *testing.B) {
			e := newEnv(b, withCostlyTree())
			if flood {
				msgs := sealN(b, e, e.stranger, 48, amp.TypeCapInvoke, invokeBody(b, costlyTreeID, costlyParams(60_000)))
				stop, _ := loop(b, e, "127.0.0.2", msgs, 8, false, true)
				defer stop()
				time.Sleep(300 * time.Millisecond) // the flood holds its slots
			}
			b.ResetTimer()
			for range b.N {
				sporadicVictim(b, e)
				b.StopTimer()
				time.Sleep(50 * time.Millisecond)
				b.StartTimer()
			}
		})
	}
}

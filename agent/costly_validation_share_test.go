package agent

import (
	"context"
	"slices"
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

// sporadicVictim sends one simple invocation (code-review, a few bytes of
// params) from the victim's address and returns how long Handle took; the
// reply must be a successful CAP_RESULT.
func sporadicVictim(t *testing.T, e *env) time.Duration {
	t.Helper()
	_, msg := e.seal(e.caller, amp.TypeCapInvoke, invokeBody(t, "org.agentries.code-review:2.1.0", goodParams))
	start := time.Now()
	raw, err := e.agent.Handle(admission.WithPeer(context.Background(), "127.0.0.1"), msg)
	d := time.Since(start)
	if err != nil {
		t.Fatalf("the victim's invocation was refused: %v", err)
	}
	rep := e.receive(e.caller, raw)
	if rep.Type != amp.TypeCapResult || resultOf(t, rep).Status != capability.StatusSuccess {
		t.Fatalf("the victim's invocation did not succeed: %s", rep.Type.Name())
	}
	return d
}

// sporadicUnloaded is the victim's median latency with nobody else.
func sporadicUnloaded(t *testing.T, e *env) time.Duration {
	t.Helper()
	var ds []time.Duration
	for range 9 {
		ds = append(ds, sporadicVictim(t, e))
	}
	slices.Sort(ds)
	return ds[len(ds)/2]
}

// sporadicBound is the most one of a sporadic victim's invocations may
// take under a flood: 250 ms, or 4 x its unloaded time when that is more.
// 250 ms is 25 of Go's 10 ms preemption quanta: the victim shares the two
// cores with the attacker's validations (it must), but it must not wait
// for one of them to finish (half a second of CPU each here, more than a
// second of wall time with four running on two cores, and seconds at
// MaxValidationCost).
func sporadicBound(unloaded time.Duration) time.Duration {
	return max(250*time.Millisecond, 4*unloaded)
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
func TestOnePeersCostlyValidationsLeaveASlotForASporadicCaller(t *testing.T) {
	e := newEnv(t, withCostlyTree())
	unloaded := sporadicUnloaded(t, e)
	flood := sealN(t, e, e.stranger, 48, amp.TypeCapInvoke, invokeBody(t, costlyTreeID, costlyParams(60_000)))
	stop, _ := loop(t, e, "127.0.0.2", flood, 8, true, true)
	defer stop()
	time.Sleep(300 * time.Millisecond) // the flood holds its slots
	var ds []time.Duration
	for range 5 {
		ds = append(ds, sporadicVictim(t, e))
		time.Sleep(200 * time.Millisecond)
	}
	stop()
	slowest := slices.Max(ds)
	t.Logf("victim unloaded %v; under the flood %v", unloaded, ds)
	if b := sporadicBound(unloaded); slowest > b {
		t.Fatalf("a sporadic caller's simple invocation took %v (the slowest of %d; unloaded %v) while one address kept 8 costly validations in flight; want at most %v: it waited for the flood's validations to free a slot", slowest, len(ds), unloaded, b)
	}
}

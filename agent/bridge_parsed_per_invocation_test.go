package agent

import (
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/capability"
	"github.com/ampbundle/ampbundle/compat"
	"github.com/ampbundle/ampbundle/resolver"
)

// bridgeRegistry is the store's registry, counting the bridge artifacts it
// resolves and refusing them, as the store refuses bytes that no longer
// match their hash, while refuse is set.
type bridgeRegistry struct {
	storeRegistry
	resolves atomic.Int64
	refuse   atomic.Bool
}

func (r *bridgeRegistry) Resolve(ref capability.SchemaRef) ([]byte, error) {
	r.resolves.Add(1)
	if r.refuse.Load() {
		return nil, amp.Named(amp.CodeUnavailable, resolver.ErrHashMismatch, "the stored bytes do not match the expected hash")
	}
	return r.Store.Resolve(ref)
}

// withBridgeRegistry serves the agent's registry through r.
func withBridgeRegistry(r *bridgeRegistry) envOption {
	return withConfig(func(c *Config) {
		r.storeRegistry = storeRegistry{c.Store}
		c.registry = r
	})
}

// bridgedInvoke sends a 1.0.0 translate-v invocation, which the 2.0.0
// handler serves through its bridge, and returns the reply.
func bridgedInvoke(t *testing.T, e *env) *amp.Message {
	t.Helper()
	_, reply := e.exchange(e.caller, amp.TypeCapInvoke, invokeBody(t, "org.agentries.translate-v:1.0.0", map[string]any{"text": "Hallo", "lang": "en"}))
	return reply
}

// TestABridgedInvocationIsNotAParseOfTheBridgeEach: every bridged
// invocation parsed the bridge artifact again (compat.ParseBridge, up to
// about 20 ms of CPU for a signed bridge within compat.MaxBridgeSize), so
// a caller allowed one bridged capability had the agent spend that per
// message. The parse is now kept per store generation: N invocations
// parse once, and a new generation (an import) parses once more. The
// stored bytes are still hash-checked at every invocation
// (docs/SPEC-DECISIONS.md AGENT-51).
func TestABridgedInvocationIsNotAParseOfTheBridgeEach(t *testing.T) {
	const n = 16
	var runs atomic.Int64
	reg := &bridgeRegistry{}
	e := newEnv(t, withBridgeBundle(t, &runs), withBridgeRegistry(reg))
	round := func(wantParses uint64) {
		t.Helper()
		for range n {
			r := resultOf(t, bridgedInvoke(t, e))
			var out map[string]any
			if err := amp.Unmarshal(r.Result, &out); err != nil || len(out) != 1 || out["translation"] != "Hallo/en/neutral" {
				t.Fatalf("bridged result %v (%v), want only translation=Hallo/en/neutral", out, err)
			}
		}
		if got := e.agent.bridges.parses.Load(); got != wantParses {
			t.Fatalf("%d bridged invocations parsed the bridge %d times in all, want %d", n, got, wantParses)
		}
	}
	round(1)
	e.importBundle(testBundle(t, seedKey(21), "org.agentries.other", 1, map[string][2]string{"org.agentries.other:1.0.0": {anyObject, anyObject}}, nil))
	round(2)
	if got := reg.resolves.Load(); got != 2*n {
		t.Fatalf("the bridge's bytes were resolved and hash-checked %d times for %d invocations, want every time", got, 2*n)
	}
	if got := runs.Load(); got != 2*n {
		t.Fatalf("the handler ran %d times, want %d", got, 2*n)
	}
}

// TestAKeptBridgeWhoseStoredBytesNoLongerMatchRunsNothing (a guard): once
// a bridge's parse is kept, a store that refuses its bytes (a hash that
// no longer matches) within the same generation still refuses the
// invocation, 5002, and the handler runs zero times: the parse kept is
// never a substitute for the check before use.
func TestAKeptBridgeWhoseStoredBytesNoLongerMatchRunsNothing(t *testing.T) {
	var runs atomic.Int64
	reg := &bridgeRegistry{}
	e := newEnv(t, withBridgeBundle(t, &runs), withBridgeRegistry(reg))
	resultOf(t, bridgedInvoke(t, e))
	if e.agent.bridges.parses.Load() != 1 || runs.Load() != 1 {
		t.Fatalf("first invocation: %d parses, %d runs, want 1 and 1", e.agent.bridges.parses.Load(), runs.Load())
	}
	cat, err := e.store.Catalog()
	if err != nil {
		t.Fatal(err)
	}
	reg.refuse.Store(true)
	if eb := errorOf(t, bridgedInvoke(t, e)); eb.Code != amp.CodeUnavailable {
		t.Fatalf("got %d, want 5002", eb.Code)
	}
	if now, err := e.store.Catalog(); err != nil || now.Generation != cat.Generation {
		t.Fatalf("the generation moved (%v): the test no longer covers a kept bridge", err)
	}
	if runs.Load() != 1 {
		t.Fatalf("the handler ran %d times behind refused bridge bytes, want 1 (the first invocation)", runs.Load())
	}
}

// TestTheKeptBridgesAreBoundedAndForgottenAtAnotherGeneration: the kept
// parses are at most maxKeptBridges, parsed from at most
// maxKeptBridgeBytes, and a put at another generation forgets the others.
func TestTheKeptBridgesAreBoundedAndForgottenAtAnotherGeneration(t *testing.T) {
	key := func(i int) bridgeKey {
		return bridgeKey{bundle: "org.agentries.bridges", key: "bridge-" + strconv.Itoa(i) + ".json", alg: capability.HashSHA256, hash: strconv.Itoa(i)}
	}
	for _, tc := range []struct {
		name      string
		puts      int
		size      int
		wantCount int
	}{
		{"many small bridges", maxKeptBridges + 100, 300, maxKeptBridges},
		{"many of the largest bridges", 40, compat.MaxBridgeSize, maxKeptBridgeBytes / compat.MaxBridgeSize},
		{"one past the bytes", 2, maxKeptBridgeBytes + 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c bridgeCache
			b := &compat.Bridge{}
			for i := range tc.puts {
				c.put(7, key(i), b, tc.size)
				if len(c.entries) > maxKeptBridges || c.bytes > maxKeptBridgeBytes {
					t.Fatalf("after %d puts: %d kept from %d bytes, bounds %d and %d", i+1, len(c.entries), c.bytes, maxKeptBridges, maxKeptBridgeBytes)
				}
			}
			if len(c.entries) != tc.wantCount || c.bytes != tc.wantCount*tc.size {
				t.Fatalf("%d kept from %d bytes, want %d from %d", len(c.entries), c.bytes, tc.wantCount, tc.wantCount*tc.size)
			}
			if tc.wantCount > 0 && c.get(7, key(tc.puts-1)) != b {
				t.Fatal("the last bridge put is not kept")
			}
			c.put(8, key(0), b, 1)
			if len(c.entries) != 1 || c.bytes != 1 || c.get(7, key(tc.puts-1)) != nil || c.get(8, key(0)) != b {
				t.Fatalf("another generation kept %d bridges from %d bytes, want only its own", len(c.entries), c.bytes)
			}
		})
	}
}

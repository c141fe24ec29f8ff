package agent

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"fmt"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/capability"
)

// The costs these guard allocate nothing per comparison: they are
// measured by benchmarks (BenchmarkInvokeOfAnUnservedRange,
// BenchmarkServedOfManyHandlers; docs/SPEC-DECISIONS.md SCALE-20,
// SCALE-21), and the tests check the answers.

// manyIDsBundle is a bundle of the capability ids ids, sharing two
// schemas, signed by the org.agentries publisher of newEnv.
func manyIDsBundle(t testing.TB, ids []capability.ID) []byte {
	t.Helper()
	d := &bundle.Draft{BundleID: fmt.Sprintf("org.agentries.scale%d", len(ids)), Version: 1, CreatedAt: t0.Add(-time.Hour),
		Artifacts: []bundle.Source{
			bundle.BytesSource("schemas/in.schema.json", bundle.MediaTypeSchema, []byte(anyObject)),
			bundle.BytesSource("schemas/out.schema.json", bundle.MediaTypeSchema, []byte(anyObject)),
		}}
	for _, id := range ids {
		d.Capabilities = append(d.Capabilities, capability.Descriptor{Name: id.Name, Version: id.Version,
			InputSchema:  capability.SchemaRef{ArtifactKey: "schemas/in.schema.json"},
			OutputSchema: capability.SchemaRef{ArtifactKey: "schemas/out.schema.json"}})
	}
	var buf bytes.Buffer
	if _, err := bundle.Write(&buf, d, []ed25519.PrivateKey{seedKey(21)}, bundle.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// manyVersionsName is the capability name of the many-versions tests.
const manyVersionsName = "org.agentries.many"

// manyVersionsEnv is an env whose store also holds n versions 1.0.i of
// manyVersionsName, each with a handler, and as many versions 2.0.i
// without one.
func manyVersionsEnv(t testing.TB, n int) *env {
	t.Helper()
	var ids []capability.ID
	served := map[string]Handler{}
	for i := range n {
		v, w := mustVersion(t, fmt.Sprintf("1.0.%d", i)), mustVersion(t, fmt.Sprintf("2.0.%d", i))
		ids = append(ids, capability.ID{Name: manyVersionsName, Version: v}, capability.ID{Name: manyVersionsName, Version: w})
		served[ids[2*i].String()] = noop
	}
	return newEnv(t, func(e *env) {
		e.importBundle(manyIDsBundle(t, ids))
		for id, h := range served {
			e.handlers[id] = h
		}
	})
}

func mustRange(s string) capability.Range {
	r, err := capability.ParseRange(s)
	if err != nil {
		panic(err)
	}
	return r
}

// handleCode sends body as typ from the env's caller and returns the
// reply's type and, for an ERROR, its code.
func handleCode(t testing.TB, e *env, typ amp.Type, body []byte) (amp.Type, amp.Code) {
	t.Helper()
	_, msg := e.seal(e.caller, typ, body)
	raw, err := e.agent.Handle(context.Background(), msg)
	if err != nil {
		t.Fatal(err)
	}
	r := e.receive(e.caller, raw)
	if r.Type != amp.TypeError {
		return r.Type, 0
	}
	eb, err := amp.DecodeError(r.Body)
	if err != nil {
		t.Fatal(err)
	}
	return r.Type, eb.Code
}

// TestInvokeOfAnUnservedRangeOfManyVersionsIsRefused: a CAP_INVOKE
// negotiating a range no served version is in is 4003 (SCALE-20 reads the
// served versions' claims once; its cost is
// BenchmarkInvokeOfAnUnservedRange's).
func TestInvokeOfAnUnservedRangeOfManyVersionsIsRefused(t *testing.T) {
	e := manyVersionsEnv(t, 250)
	if typ, code := handleCode(t, e, amp.TypeCapInvoke, unservedRangeInvoke(t)); typ != amp.TypeError || code != amp.CodeVersionMismatch {
		t.Fatalf("invoke of a range of unserved versions: %s %d, want 4003", typ.Name(), code)
	}
}

func unservedRangeInvoke(t testing.TB) []byte {
	return mustEncode(t, capability.Invoke{Capability: manyVersionsName, Params: []byte{0xa0},
		Negotiate: &capability.NegotiateHints{Range: mustRange(">=2.0.0 <3.0.0")}})
}

// BenchmarkInvokeOfAnUnservedRange: one invocation negotiating a range of
// n unserved versions beside n served ones. Before SCALE-20 it tried
// every served version for each version of the range: 143 ms at 1,000,
// 18 times the cost at 250.
func BenchmarkInvokeOfAnUnservedRange(b *testing.B) {
	for _, n := range []int{250, 1000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			e := manyVersionsEnv(b, n)
			inv := unservedRangeInvoke(b)
			for b.Loop() {
				handleCode(b, e, amp.TypeCapInvoke, inv)
			}
		})
	}
}

// manyHandlersEnv is an env serving n capabilities of one version.
func manyHandlersEnv(t testing.TB, n int) *env {
	var ids []capability.ID
	for i := range n {
		ids = append(ids, capability.ID{Name: fmt.Sprintf("org.agentries.many%d.c%05d", n, i), Version: mustVersion(t, "1.0.0")})
	}
	return newEnv(t, func(e *env) {
		e.importBundle(manyIDsBundle(t, ids))
		for _, id := range ids {
			e.handlers[id.String()] = noop
		}
	})
}

// TestServedListsEveryHandlerInOrder: Served, made once by New since
// SCALE-21 (it sorted every handler by insertion at each call), lists
// every served id in (name, version) order, and a caller changing the
// list it got changes nothing the next caller gets.
func TestServedListsEveryHandlerInOrder(t *testing.T) {
	e := manyHandlersEnv(t, 300)
	got := e.agent.Served()
	for i := 1; i < len(got); i++ {
		if !idLessForTest(got[i-1], got[i]) {
			t.Fatalf("Served is not in order at %d: %s, %s", i, got[i-1], got[i])
		}
	}
	if len(got) != len(e.handlers) {
		t.Fatalf("Served has %d ids for %d handlers", len(got), len(e.handlers))
	}
	first := got[0]
	got[0] = capability.ID{Name: "org.agentries.changed"}
	if again := e.agent.Served(); again[0] != first {
		t.Fatalf("a caller's change of the list reached the next caller: %s", again[0])
	}
}

// BenchmarkServedOfManyHandlers: before SCALE-21, 38 ms at 2,500
// handlers, 631 ms at 10,000 (an insertion sort at each call).
func BenchmarkServedOfManyHandlers(b *testing.B) {
	for _, n := range []int{2500, 10000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			e := manyHandlersEnv(b, n)
			for b.Loop() {
				e.agent.Served()
			}
		})
	}
}

func idLessForTest(x, y capability.ID) bool {
	if x.Name != y.Name {
		return x.Name < y.Name
	}
	return capability.OrderOldestFirst.CompareVersions(x.Version, y.Version) < 0
}

package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ampbundle/ampbundle/agent"
	"github.com/ampbundle/ampbundle/agent/ledger"
	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/capability"
	"github.com/ampbundle/ampbundle/mcpbridge"
)

// reloadingAgents is an agent switch over the sample store and a maker of
// the agents a reload would put in it: agent i serves the translate
// capability's 1.0.0 when serve is true, counting its runs in runs[i].
type reloadingAgents struct {
	ta   *testAgents
	sw   *agentSwitch
	runs [2]*atomic.Int64
	make func(i int, serve bool) *agent.Agent
}

func newReloadingAgents(t *testing.T) *reloadingAgents {
	t.Helper()
	r := &reloadingAgents{ta: startAgents(t), runs: [2]*atomic.Int64{new(atomic.Int64), new(atomic.Int64)}}
	priv := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{9}, ed25519.SeedSize))
	x, err := amp.AgreementKeyFromEd25519(priv)
	if err != nil {
		t.Fatal(err)
	}
	id := amp.Identity{DID: amp.DIDKey(priv.Public().(ed25519.PublicKey)), SigningKey: priv, Agreement: x}
	r.make = func(i int, serve bool) *agent.Agent {
		led, err := ledger.New(ledger.NewMemory(ledger.Limits{}), ledger.Options{Now: testNow})
		if err != nil {
			t.Fatal(err)
		}
		handlers := map[string]agent.Handler{}
		if serve {
			handlers[translateCap+":1.0.0"] = echoHandler("1.0.0", r.runs[i])
		}
		a, err := agent.New(agent.Config{Core: agent.Core{Identity: id, Store: r.ta.store, Policy: agent.Rules{{Caller: r.ta.callerDID, Prefix: "org.example"}},
			Handlers: handlers, Now: testNow, Rand: rand.Reader, Ledger: led}})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	r.sw = newAgentSwitch(r.make(0, true), slog.New(slog.NewTextHandler(io.Discard, nil)))
	t.Cleanup(r.sw.close)
	return r
}

// TestMCPCallRacingReloadIsServedByTheNewAgent: the MCP bridge looks its
// agent up, then calls it. A SIGHUP reload between the two used to close
// the agent the bridge held, and the tools/call was answered 5002
// agent_closed although a new agent was serving. What the bridge is given
// runs its calls through the switch, in the agent current when each
// starts.
func TestMCPCallRacingReloadIsServedByTheNewAgent(t *testing.T) {
	r := newReloadingAgents(t)
	held := r.sw.mcpAgent()    // the bridge's look-up, before the reload
	r.sw.swap(r.make(1, true)) // SIGHUP: a new agent; the old one is closed
	r.sw.closes.Wait()

	capID, err := capability.ParseID(translateCap + ":1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	params, err := amp.Marshal(map[string]any{"text": "hello", "lang": "fr"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := held.InvokeLocal(context.Background(), agent.LocalCall{Caller: r.ta.callerDID, Capability: capID, Params: params})
	if err != nil {
		t.Fatalf("a call looked up before a reload: %v (%s); want it served by the new agent", err, amp.NameOf(err))
	}
	if res.Type != amp.TypeCapResult {
		t.Fatalf("a call looked up before a reload answered %s; want CAP_RESULT", res.Type)
	}
	if r.runs[0].Load() != 0 || r.runs[1].Load() != 1 {
		t.Fatalf("handler runs: closed agent %d, new agent %d; want 0 and 1", r.runs[0].Load(), r.runs[1].Load())
	}
}

// TestMCPToolOfAHandlerAReloadRemovedIsTakenAway: a reload that removes a
// handler must take its tool away from MCP hosts (and one that adds a
// handler offer it). The bridge keeps its tool set while the agent it is
// given stays the same; given one unchanging switch, it kept offering the
// tool of a handler the new agent no longer had until the catalog itself
// changed. Each reload now gives the bridge a new view.
func TestMCPToolOfAHandlerAReloadRemovedIsTakenAway(t *testing.T) {
	r := newReloadingAgents(t)
	b, err := mcpbridge.New(mcpbridge.Options{Agent: r.sw.mcpAgent, Store: r.ta.store, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ct, st := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go b.ServeStdio(ctx, r.ta.callerDID, st)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	tools := func() int {
		res, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		return len(res.Tools)
	}
	if n := tools(); n != 1 {
		t.Fatalf("before the reload %d tools are offered; want the translate handler's one", n)
	}
	r.sw.swap(r.make(1, false)) // SIGHUP: the handler is removed
	r.sw.closes.Wait()
	b.Refresh(false) // the bridge's periodic comparison
	if n := tools(); n != 0 {
		t.Fatalf("after a reload that removed the handler %d tools are offered; want 0", n)
	}
}

// TestCallAfterTheSwitchClosedIsRefusedNotSpun: a call that reaches the
// switch after serve closed it (an MCP call outliving the endpoint's
// stop) found the current agent closed with no successor and looped for
// ever on a core; it is refused agent_closed by that agent.
func TestCallAfterTheSwitchClosedIsRefusedNotSpun(t *testing.T) {
	r := newReloadingAgents(t)
	capID, err := capability.ParseID(translateCap + ":1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	params, err := amp.Marshal(map[string]any{"text": "hello", "lang": "fr"})
	if err != nil {
		t.Fatal(err)
	}
	r.sw.close()
	done := make(chan error, 1)
	go func() {
		_, err := r.sw.mcpAgent().InvokeLocal(context.Background(), agent.LocalCall{Caller: r.ta.callerDID, Capability: capID, Params: params})
		done <- err
	}()
	select {
	case err := <-done:
		if amp.NameOf(err) != agent.ErrAgentClosed {
			t.Fatalf("a call after the switch closed: %v (%s); want %s", err, amp.NameOf(err), agent.ErrAgentClosed)
		}
	case <-time.After(10 * time.Second): // a hang guard, not a measure
		t.Fatal("a call after the switch closed never returned")
	}
}

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

	"github.com/ampbundle/ampbundle/agent"
	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/capability"
	"github.com/ampbundle/ampbundle/agent/ledger"
)

// TestMCPCallRacingReloadIsServedByTheNewAgent: the MCP bridge looks its
// agent up, then calls it. A SIGHUP reload between the two used to close
// the agent the bridge held, and the tools/call was answered 5002
// agent_closed although a new agent was serving. What the bridge is given
// is the switch, so the call runs in the agent current when it starts.
func TestMCPCallRacingReloadIsServedByTheNewAgent(t *testing.T) {
	ta := startAgents(t)
	seed := bytes.Repeat([]byte{9}, ed25519.SeedSize)
	priv := ed25519.NewKeyFromSeed(seed)
	x, err := amp.AgreementKeyFromEd25519(priv)
	if err != nil {
		t.Fatal(err)
	}
	id := amp.Identity{DID: amp.DIDKey(priv.Public().(ed25519.PublicKey)), SigningKey: priv, Agreement: x}
	runs := [2]*atomic.Int64{new(atomic.Int64), new(atomic.Int64)}
	newAgent := func(i int) *agent.Agent {
		led, err := ledger.New(ledger.NewMemory(ledger.Limits{}), ledger.Options{Now: testNow})
		if err != nil {
			t.Fatal(err)
		}
		handlers := map[string]agent.Handler{translateCap + ":1.0.0": echoHandler("1.0.0", runs[i])}
		a, err := agent.New(agent.Config{Core: agent.Core{Identity: id, Store: ta.store, Policy: agent.Rules{{Caller: ta.callerDID, Prefix: "org.example"}},
			Handlers: handlers, Now: testNow, Rand: rand.Reader, Ledger: led}})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	sw := newAgentSwitch(newAgent(0), slog.New(slog.NewTextHandler(io.Discard, nil)))
	t.Cleanup(sw.close)

	held := sw.mcpAgent() // the bridge's look-up, before the reload
	sw.swap(newAgent(1))  // SIGHUP: a new agent; the old one is closed
	sw.closes.Wait()

	capID, err := capability.ParseID(translateCap + ":1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	params, err := amp.Marshal(map[string]any{"text": "hello", "lang": "fr"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := held.InvokeLocal(context.Background(), agent.LocalCall{Caller: ta.callerDID, Capability: capID, Params: params})
	if err != nil {
		t.Fatalf("a call looked up before a reload: %v (%s); want it served by the new agent", err, amp.NameOf(err))
	}
	if res.Type != amp.TypeCapResult {
		t.Fatalf("a call looked up before a reload answered %s; want CAP_RESULT", res.Type)
	}
	if runs[0].Load() != 0 || runs[1].Load() != 1 {
		t.Fatalf("handler runs: closed agent %d, new agent %d; want 0 and 1", runs[0].Load(), runs[1].Load())
	}
	if !held.Allows(ta.callerDID, translateCap) || len(held.Served()) != 1 {
		t.Fatalf("the switch answers Allows %v, Served %v; want the new agent's", held.Allows(ta.callerDID, translateCap), held.Served())
	}
}

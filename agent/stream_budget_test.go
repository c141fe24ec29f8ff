package agent

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/admission"
	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/capability"
	"github.com/ampbundle/ampbundle/client"
	"github.com/ampbundle/ampbundle/transport"
)

const mib = 1 << 20

// budgetEnv is an agent that takes streams from e.caller, named by an
// allow rule, and from any other caller through a "*" rule.
func budgetEnv(t *testing.T, lim StreamLimits) (*env, *received) {
	rec := &received{}
	if lim.SpoolDir == "" {
		lim.SpoolDir = t.TempDir()
	}
	e := newEnv(t, withMemoryLedger(), withConfig(func(c *Config) {
		c.Streams = rec.handler
		c.StreamLimits = lim
		caller := c.Policy.(Rules)[0].Caller // e.caller, named by its DID
		c.Policy = Rules{{Caller: caller, Prefix: "org.agentries"}, {Caller: "*", Prefix: "org.nothing."}}
	}))
	return e, rec
}

// sizedStart is a STREAM_START of size bytes in chunks of chunk bytes,
// without the content.
func sizedStart(t testing.TB, id string, size, chunk uint64) []byte {
	b, err := amp.Marshal(amp.StreamStartBody{StreamID: id, ContentType: "application/octet-stream", Filename: "f.bin",
		TotalSize: size, TotalChunks: (size + chunk - 1) / chunk, ChunkSize: chunk, HashAlgo: "sha256"})
	must(t, err)
	return b
}

// sendFrom seals body as typ from id and hands it to the agent as a
// transport would for a message from peer ("": in process); it returns the
// verified reply, or nil for none.
func (e *env) sendFrom(id amp.Identity, peer string, typ amp.Type, body []byte) *amp.Message {
	e.t.Helper()
	_, msg := e.seal(id, typ, body)
	ctx := context.Background()
	if peer != "" {
		ctx = admission.WithPeer(ctx, peer)
	}
	raw, err := e.agent.Handle(ctx, msg)
	if err != nil {
		e.t.Fatalf("handle: %v", err)
	}
	if raw == nil {
		return nil
	}
	return e.receive(id, raw)
}

// wantBudgetRefusal checks a retryable 5004 stream_budget_exceeded whose
// message echoes none of the given peer-controlled strings.
func wantBudgetRefusal(t *testing.T, m *amp.Message, peerInput ...string) {
	t.Helper()
	wantStreamError(t, m, amp.CodeOverloaded, "stream_budget_exceeded")
	eb := errorOf(t, m)
	if eb.Retry == nil || !*eb.Retry {
		t.Fatal("stream_budget_exceeded is not retryable")
	}
	for _, s := range peerInput {
		if strings.Contains(eb.Message, s) {
			t.Fatalf("refusal %q echoes %q", eb.Message, s)
		}
	}
}

// sendAll sends content as the chunks of stream id from id, then its
// STREAM_END, and wants the ACK.
func (e *env) sendAll(id amp.Identity, peer, sid string, content []byte, chunk int) {
	e.t.Helper()
	cs := chunks(content, chunk)
	for i, c := range cs {
		if m := e.sendFrom(id, peer, amp.TypeStreamData, dataBody(e.t, sid, uint64(i), c)); m != nil {
			e.t.Fatalf("chunk %d of %s answered %s", i, sid, m.Type)
		}
	}
	wantAck(e.t.(*testing.T), e.sendFrom(id, peer, amp.TypeStreamEnd, endBody(e.t, sid, content)), sid, uint64(len(cs)))
}

// TestStreamBudgetOneAnonymousSenderCannotStarveNamedCaller is the attack
// run's: one did:key admitted by "*" declares four streams of 64 MiB
// (1,580 bytes on the wire, sparse spool files), which took the whole
// 256 MiB budget, and a caller named by its own allow rule got 5004 for a
// 2 KiB stream. Now one sender holds one share (64 MiB); fresh keys on
// fresh hosts take at most what unnamed callers may hold together
// (192 MiB); the named caller's stream goes through on the reserve.
func TestStreamBudgetOneAnonymousSenderCannotStarveNamedCaller(t *testing.T) {
	e, rec := budgetEnv(t, StreamLimits{})
	attacker := identity(t, 100)
	const attackerHost = "198.51.100.7"
	accepted := 0
	for i := range 4 {
		m := e.sendFrom(attacker, attackerHost, amp.TypeStreamStart, sizedStart(t, fmt.Sprintf("a%d", i), 64*mib, mib))
		if m == nil {
			accepted++
			continue
		}
		wantBudgetRefusal(t, m, attacker.DID, attackerHost)
	}
	if accepted != 1 {
		t.Fatalf("one anonymous sender opened %d streams of 64 MiB, want 1 (its share)", accepted)
	}
	for i := range 3 {
		key, host := identity(t, byte(101+i)), fmt.Sprintf("203.0.113.%d", i+1)
		m := e.sendFrom(key, host, amp.TypeStreamStart, sizedStart(t, "b", 64*mib, mib))
		if m == nil {
			accepted++
			continue
		}
		wantBudgetRefusal(t, m, key.DID, host)
	}
	if accepted != 3 {
		t.Fatalf("unnamed callers opened %d streams of 64 MiB, want 3 (the budget less the named callers' reserve)", accepted)
	}
	content := bytes.Repeat([]byte("named caller "), 2048/13+1)[:2048]
	if m := e.sendFrom(e.caller, "192.0.2.1", amp.TypeStreamStart, startBody(t, "named", content, 1024)); m != nil {
		t.Fatalf("the named caller's 2 KiB stream was refused: %s", errorOf(t, m).Message)
	}
	e.sendAll(e.caller, "192.0.2.1", "named", content, 1024)
	if !bytes.Equal(rec.got["named"], content) {
		t.Fatal("the named caller's content differs")
	}
}

// TestStreamBudgetPeerShareAcrossFreshKeys: did:keys cost nothing, so one
// host making a fresh key per stream (from one IPv4 address, each on its
// own port; or from one IPv6 /48, each from another address or /64 in it) holds
// no more than its peer's share (64 MiB of the 256 MiB budget), although
// each key is within its own share. Another address is another peer, and
// a caller the policy names is not bound by the share of the network it
// sends from.
func TestStreamBudgetPeerShareAcrossFreshKeys(t *testing.T) {
	for _, c := range []struct {
		name         string
		flood        func(i int) string // the i-th key's address
		other, named string
	}{
		{"one IPv4 address", func(i int) string { return fmt.Sprintf("192.0.2.7:%d", 40000+i) }, "192.0.2.8:40000", "192.0.2.7:50000"},
		{"one IPv6 /64", func(i int) string { return fmt.Sprintf("[2001:db8:1:2::%x]:443", i+1) }, "[2001:db8:2:3::1]:443", "[2001:db8:1:2::99]:443"},
		{"one IPv6 /48", func(i int) string { return fmt.Sprintf("[2001:db8:1:%x::1]:443", i+1) }, "[2001:db8:2::1]:443", "[2001:db8:1:99::1]:443"},
	} {
		t.Run(c.name, func(t *testing.T) {
			// Open-stream counts are not what stops them here.
			e, _ := budgetEnv(t, StreamLimits{PerSender: 64})
			accepted := 0
			for i := range 8 {
				key := identity(t, byte(110+i))
				m := e.sendFrom(key, transport.Peer(c.flood(i)), amp.TypeStreamStart, sizedStart(t, "s", 16*mib, mib))
				if m == nil {
					accepted++
					continue
				}
				wantBudgetRefusal(t, m, key.DID, "192.0.2", "2001:db8")
			}
			if accepted != 4 {
				t.Fatalf("fresh keys from one peer opened %d streams of 16 MiB, want 4 (its 64 MiB share)", accepted)
			}
			if m := e.sendFrom(identity(t, 120), transport.Peer(c.other), amp.TypeStreamStart, sizedStart(t, "s", 16*mib, mib)); m != nil {
				t.Fatalf("a key from another peer was refused: %s", errorOf(t, m).Message)
			}
			if m := e.sendFrom(e.caller, transport.Peer(c.named), amp.TypeStreamStart, sizedStart(t, "s", 16*mib, mib)); m != nil {
				t.Fatalf("the named caller on the flooding network was refused: %s", errorOf(t, m).Message)
			}
		})
	}
}

// TestStreamBudgetStalledStreamGivesBackItsChargeWithinGrace: a stream
// that stops sending gives back what it declared but did not receive once
// StallGrace (10 s) passes, not after the 5-minute idle window. It stays
// open: its next chunk is charged alone while the rest does not fit, and
// the whole rest once it does; the content arrives intact.
func TestStreamBudgetStalledStreamGivesBackItsChargeWithinGrace(t *testing.T) {
	const kib = 1 << 10
	e, rec := budgetEnv(t, StreamLimits{MaxBytes: 1024 * kib, SenderBytes: 1024 * kib, SpoolThreshold: 16 * kib})
	a := bytes.Repeat([]byte("0123456789abcdef"), 1024*kib/16)
	ca := chunks(a, 64*kib)
	b := bytes.Repeat([]byte("B"), 512*kib)
	if m := e.send(amp.TypeStreamStart, startBody(t, "a", a, 64*kib)); m != nil {
		t.Fatalf("STREAM_START a: %s", errorOf(t, m).Message)
	}
	e.send(amp.TypeStreamData, dataBody(t, "a", 0, ca[0]))
	wantBudgetRefusal(t, e.send(amp.TypeStreamStart, startBody(t, "b", b, 64*kib)))
	e.clock.Add(9 * time.Second) // within the grace: a keeps its charge
	wantBudgetRefusal(t, e.send(amp.TypeStreamStart, startBody(t, "b", b, 64*kib)))
	e.clock.Add(2 * time.Second) // 11 s without a chunk: a stalled
	if m := e.send(amp.TypeStreamStart, startBody(t, "b", b, 64*kib)); m != nil {
		t.Fatalf("a stalled stream still holds its declared bytes: %s", errorOf(t, m).Message)
	}
	// a's rest does not fit beside b: its chunk is charged alone.
	if m := e.send(amp.TypeStreamData, dataBody(t, "a", 1, ca[1])); m != nil {
		t.Fatalf("chunk 1 of the stalled stream: %s", errorOf(t, m).Message)
	}
	e.sendAll(e.caller, "", "b", b, 64*kib)
	// b is gone: a's next chunk charges its whole rest again.
	if m := e.send(amp.TypeStreamData, dataBody(t, "a", 2, ca[2])); m != nil {
		t.Fatalf("chunk 2: %s", errorOf(t, m).Message)
	}
	wantBudgetRefusal(t, e.send(amp.TypeStreamStart, startBody(t, "c", b[:128*kib], 64*kib)))
	for i := 3; i < len(ca); i++ {
		if m := e.send(amp.TypeStreamData, dataBody(t, "a", uint64(i), ca[i])); m != nil {
			t.Fatalf("chunk %d: %s", i, errorOf(t, m).Message)
		}
	}
	wantAck(t, e.send(amp.TypeStreamEnd, endBody(t, "a", a)), "a", uint64(len(ca)))
	if !bytes.Equal(rec.got["a"], a) || !bytes.Equal(rec.got["b"], b) {
		t.Fatal("content differs")
	}
}

// TestStreamBudgetTrickleBelowMinRateGivesBackItsCharge: "one chunk per
// window keeps it going". A chunk every 9 s stays within StallGrace, but
// 64 KiB per 9 s is far below MinRate (128 KiB/s): past the grace the
// stream gives back its unreceived bytes, and another stream gets them.
func TestStreamBudgetTrickleBelowMinRateGivesBackItsCharge(t *testing.T) {
	const kib = 1 << 10
	e, _ := budgetEnv(t, StreamLimits{MaxBytes: 1024 * kib, SenderBytes: 1024 * kib, SpoolThreshold: 16 * kib})
	a := bytes.Repeat([]byte("a"), 1024*kib)
	ca := chunks(a, 64*kib)
	e.send(amp.TypeStreamStart, startBody(t, "a", a, 64*kib))
	e.send(amp.TypeStreamData, dataBody(t, "a", 0, ca[0]))
	e.clock.Add(9 * time.Second)
	e.send(amp.TypeStreamData, dataBody(t, "a", 1, ca[1]))
	wantBudgetRefusal(t, e.send(amp.TypeStreamStart, sizedStart(t, "b", 512*kib, 64*kib)))
	e.clock.Add(9 * time.Second)
	if m := e.send(amp.TypeStreamStart, sizedStart(t, "b", 512*kib, 64*kib)); m != nil {
		t.Fatalf("a stream trickling below the minimum rate still holds its declared bytes: %s", errorOf(t, m).Message)
	}
}

// TestStreamBudgetShareLimits: beyond one sender's share a STREAM_START is
// refused retryably and the same message is taken once there is room; a
// stream larger than the share itself, or (for callers the policy does not
// name) than their part of the budget, is refused for good.
func TestStreamBudgetShareLimits(t *testing.T) {
	e, _ := budgetEnv(t, StreamLimits{MaxBytes: 100})
	wantStreamError(t, e.send(amp.TypeStreamStart, sizedStart(t, "big", 26, 26)), amp.CodeInvalidMessage, "limit_exceeded")
	if m := e.send(amp.TypeStreamStart, startBody(t, "a", make([]byte, 20), 20)); m != nil {
		t.Fatalf("STREAM_START a: %s", errorOf(t, m).Message)
	}
	_, retry := e.seal(e.caller, amp.TypeStreamStart, sizedStart(t, "b", 10, 10))
	raw, err := e.agent.Handle(context.Background(), retry)
	must(t, err)
	wantBudgetRefusal(t, e.receive(e.caller, raw))
	e.sendAll(e.caller, "", "a", make([]byte, 20), 20)
	if raw, err := e.agent.Handle(context.Background(), retry); err != nil || raw != nil {
		t.Fatalf("retried STREAM_START: %v, reply %x", err, raw)
	}
	// Unnamed callers hold 75 bytes together (the named reserve is 25).
	ss := StreamLimits{MaxBytes: 100, SenderBytes: 100}
	e, _ = budgetEnv(t, ss)
	wantStreamError(t, e.sendFrom(identity(t, 130), "", amp.TypeStreamStart, sizedStart(t, "s", 76, 76)), amp.CodeInvalidMessage, "limit_exceeded")
	if m := e.sendFrom(identity(t, 130), "", amp.TypeStreamStart, sizedStart(t, "s", 75, 75)); m != nil {
		t.Fatalf("STREAM_START of 75 bytes: %s", errorOf(t, m).Message)
	}
	wantBudgetRefusal(t, e.sendFrom(identity(t, 131), "", amp.TypeStreamStart, sizedStart(t, "s", 1, 1)))
	if m := e.send(amp.TypeStreamStart, sizedStart(t, "s", 25, 25)); m != nil {
		t.Fatalf("the named caller's reserve: %s", errorOf(t, m).Message)
	}
}

// TestParamsBudgetAnonymousCallersCannotTakeNamedReserve: the same attack
// one step later. Verified params wait up to 10 minutes for their
// CAP_INVOKE; fresh keys admitted by "*" that stream params and never
// invoke fill at most the unnamed callers' part of the waiting params
// (MaxBytes less NamedReserve), and a named caller's params still fit.
func TestParamsBudgetAnonymousCallersCannotTakeNamedReserve(t *testing.T) {
	e, _, _ := paramsEnv(t, &ParamStreamLimits{MaxBytes: 64 << 10})
	params := bigText(t, 20<<10)
	send := func(id amp.Identity) error {
		c, err := client.New(client.Config{Identity: id, Peer: e.provider.DID, Transport: client.Loopback(e.agent), Now: e.clock.Now,
			Rand: rand.Reader, Retry: client.Retry{MaxAttempts: 1}})
		must(t, err)
		_, _, err = c.SendStream(context.Background(), client.Stream{ContentType: capability.ParamsContentType, Size: uint64(len(params)), ChunkSize: 8 << 10}, bytes.NewReader(params))
		return err
	}
	for i := range 2 {
		if err := send(identity(t, byte(140+i))); err != nil {
			t.Fatalf("anonymous params %d: %v", i, err)
		}
	}
	if err := send(identity(t, 142)); reasonOf(t, err) != "params_budget_exceeded" || !amp.CodeOf(err).Retryable() {
		t.Fatalf("anonymous params beyond their part: %v", err)
	}
	if err := send(e.caller); err != nil {
		t.Fatalf("the named caller's params: %v", err)
	}
	if n := e.agent.WaitingParams(); n != 3 {
		t.Fatalf("%d params waiting, want 3", n)
	}
}

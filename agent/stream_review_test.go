package agent

import (
	"bytes"
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/agent/ledger"
	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/capability"
	"github.com/ampbundle/ampbundle/transport"
)

// The threats of a review of the stream budget shares (issue 29, item 1):
// slots one key holds forever, a stall defeated by a tiny chunk per grace,
// streamed params lost to a ledger refusal, a hand-over before the
// ledger's room, and many IPv6 prefixes of one site.

// refusingStore is a memory ledger store that refuses to mark an entry
// running, as a full share would (3005 caller_quota_exceeded), while
// refuse is set.
type refusingStore struct {
	*ledger.MemoryStore
	refuse atomic.Bool
}

func (s *refusingStore) full() error {
	return amp.Named(amp.CodeRateLimited, ledger.ErrCallerFull, "this caller's share of the ledger is used up; retry later")
}

func (s *refusingStore) MarkRunning(k ledger.Key, expires time.Time) error {
	if s.refuse.Load() {
		return s.full()
	}
	return s.MemoryStore.MarkRunning(k, expires)
}

func (s *refusingStore) MarkRunningWithin(k ledger.Key, expires time.Time, reserve int64) error {
	if s.refuse.Load() {
		return s.full()
	}
	return s.MemoryStore.MarkRunningWithin(k, expires, reserve)
}

// withRefusingLedger gives the agent a memory ledger that refuses room
// while the returned store's refuse is set.
func withRefusingLedger(store *refusingStore) envOption {
	return func(e *env) {
		store.MemoryStore = ledger.NewMemory(ledger.Limits{})
		l, err := ledger.New(store, ledger.Options{Now: e.clock.Now})
		must(e.t, err)
		e.cfg.Ledger = l
	}
}

// TestStreamSlotsOneAnonymousKeyCannotHoldThemForever: one fresh did:key
// admitted by "*" opens 4 streams of 2 bytes and resends a chunk it
// already sent every 4 minutes, which used to keep them from their idle
// timeout, while the 4 slots were all that every caller without a rule of
// its own had: after an hour a caller with no rule on another host still
// got 5004 too_many_streams. Now the slots of unnamed callers are counted
// by peer, a repeated chunk is no progress, and a stream that stopped
// making progress gives its slot up when another stream of its peer needs
// it.
func TestStreamSlotsOneAnonymousKeyCannotHoldThemForever(t *testing.T) {
	e, _ := budgetEnv(t, StreamLimits{})
	attacker := identity(t, 150)
	const hostA, hostB = "198.51.100.7", "203.0.113.9"
	for i := range 4 {
		sid := fmt.Sprintf("s%d", i)
		if m := e.sendFrom(attacker, hostA, amp.TypeStreamStart, startBody(t, sid, []byte("hi"), 1)); m != nil {
			t.Fatalf("STREAM_START %d: %s", i, errorOf(t, m).Message)
		}
		e.sendFrom(attacker, hostA, amp.TypeStreamData, dataBody(t, sid, 0, []byte("h")))
	}
	// Within the grace the peer's slots are taken (the streams may still
	// be on their way).
	wantStreamError(t, e.sendFrom(identity(t, 151), hostA, amp.TypeStreamStart, startBody(t, "x", []byte("hi"), 1)), amp.CodeOverloaded, "too_many_streams")
	// Another host's unnamed caller does not share them.
	if m := e.sendFrom(identity(t, 152), hostB, amp.TypeStreamStart, startBody(t, "x", []byte("hi"), 1)); m != nil {
		t.Fatalf("a caller with no rule on another host was refused while one key holds its host's slots: %s", errorOf(t, m).Message)
	}
	// Past the grace a stream that makes no progress gives its slot to a
	// new stream of its peer.
	e.clock.Add(11 * time.Second)
	if m := e.sendFrom(identity(t, 153), hostA, amp.TypeStreamStart, startBody(t, "x", []byte("hi"), 1)); m != nil {
		t.Fatalf("stalled streams still hold every slot of their peer: %s", errorOf(t, m).Message)
	}
	// The repeated chunk every 4 minutes does not keep the rest open.
	for range 15 {
		e.clock.Add(4 * time.Minute)
		for i := range 4 {
			e.sendFrom(attacker, hostA, amp.TypeStreamData, dataBody(t, fmt.Sprintf("s%d", i), 0, []byte("h")))
		}
	}
	for i := range 4 {
		wantStreamError(t, e.sendFrom(attacker, hostA, amp.TypeStreamData, dataBody(t, fmt.Sprintf("s%d", i), 1, []byte("i"))),
			amp.CodeInvalidMessage, "unknown_stream")
	}
	for i, host := range []string{hostA, hostB} {
		if m := e.sendFrom(identity(t, byte(154+i)), host, amp.TypeStreamStart, startBody(t, "y", []byte("hi"), 1)); m != nil {
			t.Fatalf("after an hour, a caller with no rule on %s was refused: %s", host, errorOf(t, m).Message)
		}
	}
}

// paramsStart is a STREAM_START for params content of size bytes.
func paramsStart(t *testing.T, id string, content []byte) []byte {
	b, err := amp.Marshal(amp.StreamStartBody{StreamID: id, ContentType: capability.ParamsContentType,
		TotalSize: uint64(len(content)), TotalChunks: 1, ChunkSize: uint64(len(content)), HashAlgo: "sha256"})
	must(t, err)
	return b
}

// sendParams streams content as params stream sid from id on peer and
// returns the STREAM_END's reply.
func (e *env) sendParams(t *testing.T, id amp.Identity, peer, sid string, content []byte) *amp.Message {
	t.Helper()
	if m := e.sendFrom(id, peer, amp.TypeStreamStart, paramsStart(t, sid, content)); m != nil {
		t.Fatalf("STREAM_START %s: %s", sid, errorOf(t, m).Message)
	}
	if m := e.sendFrom(id, peer, amp.TypeStreamData, dataBody(t, sid, 0, content)); m != nil {
		t.Fatalf("STREAM_DATA %s: %s", sid, errorOf(t, m).Message)
	}
	return e.sendFrom(id, peer, amp.TypeStreamEnd, endBody(t, sid, content))
}

// TestParamsSlotsOneAnonymousPeerCannotHoldThemForever: the same attack on
// waiting params, whose 4 slots all callers without a rule of their own
// shared for 10 minutes: one host's fresh keys stream 4 params and never
// invoke. Another host's caller still has its slots, and past a short
// grace the oldest unclaimed params give way to new ones from their peer.
func TestParamsSlotsOneAnonymousPeerCannotHoldThemForever(t *testing.T) {
	e, _, _ := paramsEnv(t, &ParamStreamLimits{})
	const hostA, hostB = "198.51.100.7", "203.0.113.9"
	params := bigText(t, 16)
	for i := range 4 {
		wantAck(t, e.sendParams(t, identity(t, byte(160+i)), hostA, "p", params), "p", 1)
	}
	wantStreamError(t, e.sendParams(t, identity(t, 164), hostA, "p", params), amp.CodeOverloaded, "params_budget_exceeded")
	wantAck(t, e.sendParams(t, identity(t, 165), hostB, "p", params), "p", 1)
	e.clock.Add(11 * time.Second)
	wantAck(t, e.sendParams(t, identity(t, 166), hostA, "q", params), "q", 1)
	if n := e.agent.WaitingParams(); n != 5 {
		t.Fatalf("%d params waiting, want 5 (4 of host A, one of host B)", n)
	}
}

// TestStreamStallNotDefeatedByOneTinyChunkPerGrace: a stalled stream's
// next chunk used to charge its whole declared size again and start a
// fresh pace with a fresh 10 s grace, so one 64-byte chunk 10.3 s after
// each resume (6 B/s against a minimum of 128 KiB/s) held the whole
// charge, and a stream probing 9.9 s after each chunk was refused every
// time. Now the pace counts from the stream's start: behind it, a chunk
// charges what was received plus MinRate × StallGrace, given back at the
// next check.
func TestStreamStallNotDefeatedByOneTinyChunkPerGrace(t *testing.T) {
	e, _ := budgetEnv(t, StreamLimits{MaxBytes: 6 * mib, SenderBytes: 6 * mib, PerSender: 64, SpoolThreshold: 16 << 10})
	const chunk = 64
	if m := e.send(amp.TypeStreamStart, sizedStart(t, "a", 4*mib, chunk)); m != nil {
		t.Fatalf("STREAM_START: %s", errorOf(t, m).Message)
	}
	tiny := bytes.Repeat([]byte("a"), chunk)
	e.send(amp.TypeStreamData, dataBody(t, "a", 0, tiny))
	refused := 0
	for i := 1; i <= 30; i++ {
		e.clock.Add(10300 * time.Millisecond)
		if m := e.send(amp.TypeStreamData, dataBody(t, "a", uint64(i), tiny)); m != nil {
			t.Fatalf("chunk %d: %s", i, errorOf(t, m).Message)
		}
		e.clock.Add(9900 * time.Millisecond)
		if m := e.send(amp.TypeStreamStart, sizedStart(t, fmt.Sprintf("v%d", i), 3*mib, 64<<10)); m != nil {
			wantBudgetRefusal(t, m)
			refused++
		}
	}
	if refused != 0 {
		t.Fatalf("a stream sending one tiny chunk per grace kept its whole charge: %d of 30 probes refused", refused)
	}
}

// TestStreamedParamsSurviveALedgerRefusal: a CAP_INVOKE naming streamed
// params that the ledger refuses for want of room (3005, retryable:
// nothing ran) used to lose its params, so that the retry of the same
// message got a final 4001 unknown_params_stream. Now the params are used
// up only once the run is recorded: the retry runs with them, once.
func TestStreamedParamsSurviveALedgerRefusal(t *testing.T) {
	store := &refusingStore{}
	e, _, got := paramsEnv(t, &ParamStreamLimits{}, withRefusingLedger(store))
	params := bigText(t, 8<<10) // spooled: above the 4 KiB threshold
	wantAck(t, e.sendParams(t, e.caller, "", "p", params), "p", 1)
	inv, err := translateInvoke(t).WithParamsStream("p", params)
	must(t, err)
	body, err := inv.Encode()
	must(t, err)
	_, msg := e.seal(e.caller, amp.TypeCapInvoke, body)
	store.refuse.Store(true)
	raw, err := e.agent.Handle(context.Background(), msg)
	must(t, err)
	if eb := errorOf(t, e.receive(e.caller, raw)); eb.Code != amp.CodeRateLimited || eb.Retry == nil || !*eb.Retry {
		t.Fatalf("refused with %d %q, want a retryable 3005", eb.Code, eb.Message)
	}
	if n := len(got()); n != 0 || e.agent.WaitingParams() != 1 {
		t.Fatalf("after the refusal: %d runs, %d params waiting; want 0 and 1", n, e.agent.WaitingParams())
	}
	store.refuse.Store(false)
	raw, err = e.agent.Handle(context.Background(), msg)
	must(t, err)
	if res := resultOf(t, e.receive(e.caller, raw)); res.Status != capability.StatusSuccess {
		t.Fatalf("the retry after a ledger refusal: %+v", res.Error)
	}
	if g := got(); len(g) != 1 || g[0] != 8<<10 || e.agent.WaitingParams() != 0 {
		t.Fatalf("the handler got %v, %d params still waiting", g, e.agent.WaitingParams())
	}
}

// TestStreamHandOverWaitsForLedgerRoom: a complete stream used to be handed
// to the application before the ledger reserved room for its ACK; with
// the share full the application got it and the ACK was kept in memory
// only, so a replay later got unknown_stream instead of the same ACK. Now
// the ledger's room comes first: a refusal (3005, retryable) hands nothing
// over and keeps the stream, the same message then succeeds, and its ACK
// is recorded.
func TestStreamHandOverWaitsForLedgerRoom(t *testing.T) {
	store := &refusingStore{}
	rec := &received{}
	e := newEnv(t, withRefusingLedger(store), withConfig(func(c *Config) { c.Streams = rec.handler }))
	content := []byte("handed over once, after the record")
	e.send(amp.TypeStreamStart, startBody(t, "s", content, 16))
	for i, c := range chunks(content, 16) {
		e.send(amp.TypeStreamData, dataBody(t, "s", uint64(i), c))
	}
	_, end := e.seal(e.caller, amp.TypeStreamEnd, endBody(t, "s", content))
	store.refuse.Store(true)
	raw, err := e.agent.Handle(context.Background(), end)
	must(t, err)
	if eb := errorOf(t, e.receive(e.caller, raw)); eb.Code != amp.CodeRateLimited || eb.Retry == nil || !*eb.Retry {
		t.Fatalf("refused with %d %q, want a retryable 3005", eb.Code, eb.Message)
	}
	if len(rec.info) != 0 || e.agent.OpenStreams() != 1 {
		t.Fatalf("after the ledger's refusal: %d hand-overs, %d open streams; want 0 and 1", len(rec.info), e.agent.OpenStreams())
	}
	store.refuse.Store(false)
	raw, err = e.agent.Handle(context.Background(), end)
	must(t, err)
	wantAck(t, e.receive(e.caller, raw), "s", 3)
	// The ACK is durable: a replay gets it byte for byte, even once the
	// ledger refuses new entries.
	store.refuse.Store(true)
	again, err := e.agent.Handle(context.Background(), end)
	must(t, err)
	if !bytes.Equal(again, raw) || len(rec.info) != 1 || !bytes.Equal(rec.got["s"], content) {
		t.Fatalf("replay: same ACK %v, %d hand-overs", bytes.Equal(again, raw), len(rec.info))
	}
}

// TestStreamBudgetManyIPv6Prefixes: one IPv6 site has many /64s (a /56 has
// 256): fresh keys from three /64s of it held all 192 MiB that callers
// without a rule of their own may hold together, and a caller with no rule
// on another network got 5004 for any stream. Streams of unnamed callers
// are counted by /48: the site holds one peer's share (64 MiB).
func TestStreamBudgetManyIPv6Prefixes(t *testing.T) {
	e, _ := budgetEnv(t, StreamLimits{})
	accepted := 0
	for i := range 4 {
		key, host := identity(t, byte(170+i)), fmt.Sprintf("[2001:db8:1:1%02x::1]:443", i)
		m := e.sendFrom(key, transport.Peer(host), amp.TypeStreamStart, sizedStart(t, "s", 64*mib, mib))
		if m == nil {
			accepted++
			continue
		}
		wantBudgetRefusal(t, m, key.DID, "2001:db8")
	}
	if accepted != 1 {
		t.Fatalf("fresh keys from four /64s of one /56 opened %d streams of 64 MiB, want 1 (one share)", accepted)
	}
	if m := e.sendFrom(identity(t, 175), transport.Peer("[2001:db8:2::1]:443"), amp.TypeStreamStart, sizedStart(t, "s", 64*mib, mib)); m != nil {
		t.Fatalf("a caller with no rule on another network was refused: %s", errorOf(t, m).Message)
	}
	if m := e.sendFrom(e.caller, transport.Peer("[2001:db8:1:101::1]:443"), amp.TypeStreamStart, sizedStart(t, "s", 64*mib, mib)); m != nil {
		t.Fatalf("the named caller on the flooding site was refused: %s", errorOf(t, m).Message)
	}
}

// TestStreamPeerOfIPv6IsItsSlash48: what streamPeer counts by.
func TestStreamPeerOfIPv6IsItsSlash48(t *testing.T) {
	for in, want := range map[string]string{
		"198.51.100.7":         "198.51.100.7",
		"2001:db8:1:2::/64":    "2001:db8:1::/48",
		"2001:db8:1:ff00::/64": "2001:db8:1::/48",
		"2001:db8:abcd:12::5":  "2001:db8:abcd::/48",
		"":                     "",
		"not an address":       "not an address",
		"::ffff:198.51.100.7":  "::ffff:198.51.100.7",
		"2001:db8:1:2::/32":    "2001:db8:1:2::/32",
		"2001:db8:1:2:3:4:5:6": "2001:db8:1::/48",
		"2001:db8:1:2::/128":   "2001:db8:1::/48",
		"[2001:db8::1]:443":    "[2001:db8::1]:443",
		"2001:db8:ffff::/48":   "2001:db8:ffff::/48",
	} {
		if got := streamPeer(in); got != want {
			t.Errorf("streamPeer(%q) = %q, want %q", in, got, want)
		}
	}
}

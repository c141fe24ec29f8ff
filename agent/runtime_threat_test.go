package agent

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/agent/ledger"
	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/capability"
)

// TestRunningEntryExpiringMidRunKeepsItsResult: a ttl = 0 invocation
// with a 60 s timeout whose handler runs past ts + ttl + skew (the
// message's own expiry) while the ledger is swept keeps its entry, and the
// caller gets the handler's CAP_RESULT, recorded for replays; even when
// the clock jumps past every expiry and the entry is reclaimed, the result
// is sent and recorded, not dropped (threat: the entry reclaimed while
// running, Finish finding nothing, the result lost and a retry running
// the handler a second time).
func TestRunningEntryExpiringMidRunKeepsItsResult(t *testing.T) {
	const id = "org.agentries.code-review:2.1.0"
	for _, tc := range []struct {
		name      string
		runFor    time.Duration // agent time the handler takes
		reclaimed bool          // the running entry is swept meanwhile
	}{
		{"handler within its timeout", 61 * time.Second, false},
		{"clock jumps past every expiry", 10 * time.Minute, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			release, started := make(chan struct{}), make(chan struct{})
			e := newEnv(t, withHandler(id, func(ctx context.Context, p any) (any, error) {
				close(started)
				<-release
				return map[string]any{"issues": []any{}, "version": "ran"}, nil
			}))
			cid, _ := capability.ParseID(id)
			params, _ := amp.Marshal(goodParams)
			timeout := uint64(60_000)
			body, err := capability.Invoke{ID: cid, Params: params, TimeoutMS: &timeout}.Encode()
			if err != nil {
				t.Fatal(err)
			}
			req, msg := e.sealTTL(e.caller, amp.TypeCapInvoke, body, -1)
			type out struct {
				raw []byte
				err error
			}
			done := make(chan out, 1)
			go func() {
				raw, err := e.agent.Handle(context.Background(), msg)
				done <- out{raw, err}
			}()
			<-started
			e.clock.Add(tc.runFor)
			if _, err := e.agent.Sweep(); err != nil {
				t.Fatal(err)
			}
			// Whichever reclaimed it (this sweep, or the commit of the
			// sweep Handle started in the background, which reclaims what
			// has expired by the clock of its commit), the entry is gone
			// exactly when the clock passed its expiry.
			_, kept, err := e.agent.Ledger().Store().Lookup(ledger.Key{Sender: e.caller.DID, ID: req.ID})
			if err != nil {
				t.Fatal(err)
			}
			if kept == tc.reclaimed {
				t.Fatalf("running entry kept %v after a sweep at +%v while the handler ran", kept, tc.runFor)
			}
			close(release)
			o := <-done
			if o.err != nil {
				t.Fatalf("the handler's result was lost: %v", o.err)
			}
			reply := e.receive(e.caller, o.raw)
			if res := resultOf(t, reply); res.Status != capability.StatusSuccess || resultVersion(t, res) != "ran" {
				t.Fatalf("got %+v, want the handler's result", res)
			}
			st, err := e.agent.Ledger().Start(e.caller.DID, req.ID, e.clock.Now())
			if err != nil {
				t.Fatal(err)
			}
			if st.Ticket != nil {
				st.Ticket.Abandon()
			}
			if st.State.String() != "done" || !bytes.Equal(st.Reply, o.raw) {
				t.Fatalf("the ledger holds %s for the invocation, want its reply (done)", st.State)
			}
		})
	}
}

// TestStreamEndAckSurvivesAReplayCacheFlush: once the application accepted
// a stream, a replayed STREAM_END gets the byte-identical ACK even after
// the sender flushed the ledger's volatile cache with PINGs, and the
// application is not handed the stream again (threat: a replay answered
// unknown_stream although the callback ran, so the sender believes the
// transfer failed).
func TestStreamEndAckSurvivesAReplayCacheFlush(t *testing.T) {
	rec := &received{}
	var calls atomic.Int64
	e := newEnv(t, withConfig(func(c *Config) {
		l, err := ledger.New(ledger.NewMemory(ledger.Limits{}), ledger.Options{Now: func() time.Time { return t0 }, VolatileEntries: 8})
		must(t, err)
		c.Ledger = l
		c.Streams = func(ctx context.Context, info StreamInfo, r io.Reader) error {
			calls.Add(1)
			return rec.handler(ctx, info, r)
		}
	}))
	content := []byte("hello")
	e.send(amp.TypeStreamStart, startBody(t, "s", content, 8))
	e.send(amp.TypeStreamData, dataBody(t, "s", 0, content))
	_, end := e.seal(e.caller, amp.TypeStreamEnd, endBody(t, "s", content))
	first, err := e.agent.Handle(context.Background(), end)
	must(t, err)
	wantAck(t, e.receive(e.caller, first), "s", 1)
	for i := 0; i < 32; i++ {
		e.send(amp.TypePing, nil)
	}
	again, err := e.agent.Handle(context.Background(), end)
	must(t, err)
	if !bytes.Equal(again, first) {
		t.Fatalf("the replayed STREAM_END got %s, not its ACK", e.receive(e.caller, again).Type)
	}
	if calls.Load() != 1 {
		t.Fatalf("the application was handed the stream %d times", calls.Load())
	}
}

// TestRetryableStreamRefusalKeepsTheStream: an application that refuses a
// complete stream with a retryable error (5004) gets a new STREAM_END, and
// the stream is still there to be handed over (threat: a retryable refusal
// that drops the stream, so the retry can only fail with unknown_stream
// and the transfer is lost). The application ran, so, as for a handler's
// retryable error, the first message's ERROR is recorded for its id
// (docs/SPEC-DECISIONS.md AGENT-6).
func TestRetryableStreamRefusalKeepsTheStream(t *testing.T) {
	rec := &received{}
	var calls atomic.Int64
	e := newEnv(t, withMemoryLedger(), withConfig(func(c *Config) {
		c.Streams = func(ctx context.Context, info StreamInfo, r io.Reader) error {
			if calls.Add(1) == 1 {
				return amp.Named(amp.CodeOverloaded, "busy", "the application is busy; retry")
			}
			return rec.handler(ctx, info, r)
		}
	}))
	content := []byte("hello, again")
	e.send(amp.TypeStreamStart, startBody(t, "s", content, 4))
	for i, c := range chunks(content, 4) {
		e.send(amp.TypeStreamData, dataBody(t, "s", uint64(i), c))
	}
	_, end := e.seal(e.caller, amp.TypeStreamEnd, endBody(t, "s", content))
	raw, err := e.agent.Handle(context.Background(), end)
	must(t, err)
	if eb := errorOf(t, e.receive(e.caller, raw)); eb.Code != amp.CodeOverloaded {
		t.Fatalf("first STREAM_END got %d, want the application's 5004", eb.Code)
	}
	if again, err := e.agent.Handle(context.Background(), end); err != nil || !bytes.Equal(again, raw) {
		t.Fatalf("the same STREAM_END again did not get its recorded ERROR (%v)", err)
	}
	_, end = e.seal(e.caller, amp.TypeStreamEnd, endBody(t, "s", content))
	raw, err = e.agent.Handle(context.Background(), end)
	must(t, err)
	wantAck(t, e.receive(e.caller, raw), "s", 3)
	if !bytes.Equal(rec.got["s"], content) || calls.Load() != 2 {
		t.Fatalf("application got %q after %d calls", rec.got["s"], calls.Load())
	}
}

// freshIdentity is a did:key made on the spot, as an attacker makes them.
func freshIdentity(t testing.TB) amp.Identity {
	_, k, err := ed25519.GenerateKey(rand.Reader)
	must(t, err)
	x, err := amp.AgreementKeyFromEd25519(k)
	must(t, err)
	return amp.Identity{DID: amp.DIDKey(k.Public().(ed25519.PublicKey)), SigningKey: k, Agreement: x}
}

// openPolicy lets anyone use org.agentries and names e.caller too.
func openPolicy(e *env) Rules {
	return Rules{{Caller: "*", Prefix: "org.agentries"}, {Caller: e.caller.DID, Prefix: "org.agentries"}}
}

// TestFreshDIDKeysShareOneLedgerQuota: under an open policy, invocations
// from many fresh did:keys are charged to one shared quota, so they are
// refused (3005, retryable) once that share is used, and a caller the
// policy names still has its own share of the ledger (threat: free
// identities each taking a full per-caller share until the whole budget,
// kept for days, is theirs and every named caller gets 5004).
func TestFreshDIDKeysShareOneLedgerQuota(t *testing.T) {
	const id = "org.agentries.code-review:2.1.0"
	e := newEnv(t, withConfig(func(c *Config) {
		c.Ledger = memoryLedger(t, func() time.Time { return t0 }, ledger.Limits{Budget: 64 << 10, PerCaller: 16 << 10})
	}), func(e *env) { e.cfg.Policy = openPolicy(e) })
	refused := 0
	for i := 0; i < 40; i++ {
		stranger := freshIdentity(t)
		_, raw := e.seal(stranger, amp.TypeCapInvoke, invokeBody(t, id, goodParams))
		out, err := e.agent.Handle(context.Background(), raw)
		must(t, err)
		reply := e.receive(stranger, out)
		if reply.Type == amp.TypeError {
			if eb := errorOf(t, reply); eb.Code != amp.CodeRateLimited || eb.Retry == nil || !*eb.Retry {
				t.Fatalf("fresh did:key %d refused with %d (retry %v), want 3005 retryable", i, eb.Code, eb.Retry)
			}
			refused++
		}
	}
	if refused == 0 {
		t.Fatal("40 fresh did:keys were never held to one shared quota")
	}
	if u := e.agent.Ledger().Usage(); u.Bytes > 16<<10 {
		t.Fatalf("fresh did:keys hold %d ledger bytes, more than one caller's share", u.Bytes)
	}
	_, reply := e.exchange(e.caller, amp.TypeCapInvoke, invokeBody(t, id, goodParams))
	if res := resultOf(t, reply); res.Status != capability.StatusSuccess {
		t.Fatalf("the named caller got %+v after the flood", res)
	}
}

// TestFreshDIDKeysShareOneStreamQuota: under an open policy, fresh
// did:keys share one caller's allowance of open streams, and a caller the
// policy names can still open one (threat: free identities taking every
// stream slot of the agent).
func TestFreshDIDKeysShareOneStreamQuota(t *testing.T) {
	rec := &received{}
	e := newEnv(t, withMemoryLedger(), withConfig(func(c *Config) {
		c.Streams = rec.handler
		c.StreamLimits = StreamLimits{PerSender: 2, MaxStreams: 8}
	}), func(e *env) { e.cfg.Policy = openPolicy(e) })
	content := []byte("data")
	opened := 0
	for i := 0; i < 10; i++ {
		stranger := freshIdentity(t)
		_, raw := e.seal(stranger, amp.TypeStreamStart, startBody(t, "s", content, 4))
		out, err := e.agent.Handle(context.Background(), raw)
		must(t, err)
		if out == nil {
			opened++
		}
	}
	if opened != 2 {
		t.Fatalf("10 fresh did:keys opened %d streams, want the 2 of one shared allowance", opened)
	}
	if m := e.send(amp.TypeStreamStart, startBody(t, "mine", content, 4)); m != nil {
		t.Fatalf("the named caller's STREAM_START got %s after the flood", m.Type)
	}
}

// TestPingFloodCannotEvictAnotherCallersReplies: a refusal kept in the
// ledger's volatile cache for a named caller is still answered
// byte-identically after other senders (fresh did:keys) sent more PINGs
// than the cache holds (threat: anyone flushing the cache so that
// replays stop getting the same bytes, RFC 001 §16.2).
func TestPingFloodCannotEvictAnotherCallersReplies(t *testing.T) {
	e := newEnv(t, withConfig(func(c *Config) {
		l, err := ledger.New(ledger.NewMemory(ledger.Limits{}), ledger.Options{Now: func() time.Time { return t0 }, VolatileEntries: 64})
		must(t, err)
		c.Ledger = l
	}), func(e *env) { e.cfg.Policy = openPolicy(e) })
	_, msg := e.seal(e.caller, amp.TypeCapInvoke, invokeBody(t, "org.agentries.nothing:1.0.0", goodParams))
	first, err := e.agent.Handle(context.Background(), msg)
	must(t, err)
	if eb := errorOf(t, e.receive(e.caller, first)); eb.Code != amp.CodeCapabilityNotFound {
		t.Fatalf("got %d, want 4002", eb.Code)
	}
	for i := 0; i < 200; i++ {
		_, raw := e.seal(freshIdentity(t), amp.TypePing, nil)
		_, err := e.agent.Handle(context.Background(), raw)
		must(t, err)
	}
	again, err := e.agent.Handle(context.Background(), msg)
	must(t, err)
	if !bytes.Equal(again, first) {
		t.Fatal("the named caller's refusal was evicted by other senders' PINGs: its replay got different bytes")
	}
}

// TestInlineHandlerIgnoringItsDeadlineGetsTimeout: with InlineHandlers, a
// handler that ignores its context and returns after its deadline gets
// the same CAP_RESULT 5003 as a detached one; its late result is never
// sent (threat: running handlers on the caller's goroutine turning a
// deadline into a suggestion).
func TestInlineHandlerIgnoringItsDeadlineGetsTimeout(t *testing.T) {
	const id = "org.agentries.code-review:2.1.0"
	e := newEnv(t, withConfig(func(c *Config) { c.InlineHandlers = true; c.MaxTimeout = 20 * time.Millisecond }),
		withHandler(id, func(ctx context.Context, p any) (any, error) {
			time.Sleep(60 * time.Millisecond) // ignores its context
			return map[string]any{"issues": []any{}, "version": "late"}, nil
		}))
	_, reply := e.exchange(e.caller, amp.TypeCapInvoke, invokeBody(t, id, goodParams))
	if r := resultOf(t, reply); r.Error == nil || r.Error.Code != amp.CodeTimeout {
		t.Fatalf("got %+v, want CAP_RESULT 5003", r)
	}
}

// TestBatchStopsStartingItemsAtItsDeadline: a BATCH whose items run long
// starts no item after Config.MaxBatchDuration; the rest are answered,
// unprocessed, by a retryable ERROR 5003 with their batch_index, and each
// of them sent again alone runs (threat: one request holding the agent's
// connection and CPU for 256 items × 60 s in turn).
func TestBatchStopsStartingItemsAtItsDeadline(t *testing.T) {
	var e *env
	var runs atomic.Int64
	e = newEnv(t, withConfig(func(c *Config) { c.MaxBatchDuration = time.Minute }),
		withHandler(reviewID, func(ctx context.Context, p any) (any, error) {
			runs.Add(1)
			e.clock.Add(40 * time.Second) // each item takes 40 s of agent time
			return map[string]any{"issues": []any{}, "version": "ran"}, nil
		}))
	var items [][]byte
	for i := 0; i < 4; i++ {
		_, m := e.seal(e.caller, amp.TypeCapInvoke, invokeBody(t, reviewID, goodParams))
		items = append(items, m)
	}
	c, container := e.batchOf(e.caller, items...)
	_, replies, _ := e.batchReplies(e.caller, container)
	if len(replies) != 4 {
		t.Fatalf("%d replies for 4 items", len(replies))
	}
	for i := 0; i < 2; i++ {
		if res := resultOf(t, replies[i]); res.Status != capability.StatusSuccess {
			t.Fatalf("item %d started before the deadline: %+v", i, res)
		}
	}
	for i := 2; i < 4; i++ {
		eb := errorOf(t, replies[i])
		if eb.Code != amp.CodeTimeout || eb.Retry == nil || !*eb.Retry || eb.BatchIndex == nil || *eb.BatchIndex != uint64(i) ||
			!bytes.Equal(replies[i].ReplyTo, c.ID[:]) {
			t.Fatalf("item %d after the deadline: %+v", i, eb)
		}
	}
	if runs.Load() != 2 {
		t.Fatalf("the handler ran %d times, want 2 (no item started after the deadline)", runs.Load())
	}
	raw, err := e.agent.Handle(context.Background(), items[3])
	must(t, err)
	if res := resultOf(t, e.receive(e.caller, raw)); res.Status != capability.StatusSuccess || runs.Load() != 3 {
		t.Fatalf("item 3 sent alone: %+v after %d runs", res, runs.Load())
	}
}

// failingFinishStore is a durable store whose disk fails after Running:
// every Finish returns ledger_unavailable.
type failingFinishStore struct {
	*ledger.MemoryStore
	finishes atomic.Int64
}

func (s *failingFinishStore) Finish(k ledger.Key, reply []byte) error {
	s.finishes.Add(1)
	return amp.Named(amp.CodeUnavailable, ledger.ErrLedgerIO, "disk failed")
}

// TestLedgerFailureAfterTheHandlerRanStillSendsItsResult: the disk fails
// between Running and Finish (threat: an outcome that exists is lost, the
// caller is told to retry, and the retry can only say "outcome unknown").
// The handler's own CAP_RESULT is sent, signed; a retry of the same
// message does not run the handler again and is answered "outcome
// unknown" (a CAP_RESULT), also when that answer cannot be recorded.
func TestLedgerFailureAfterTheHandlerRanStillSendsItsResult(t *testing.T) {
	const id = "org.agentries.code-review:2.1.0"
	store := &failingFinishStore{MemoryStore: ledger.NewMemory(ledger.Limits{})}
	var runs atomic.Int64
	e := newEnv(t, withHandler(id, func(ctx context.Context, p any) (any, error) {
		runs.Add(1)
		return map[string]any{"issues": []any{}, "version": "ran once"}, nil
	}), withConfig(func(c *Config) {
		l, err := ledger.New(store, ledger.Options{Now: time.Now})
		if err != nil {
			t.Fatal(err)
		}
		c.Ledger = l
	}))
	_, msg := e.seal(e.caller, amp.TypeCapInvoke, invokeBody(t, id, goodParams))
	raw, err := e.agent.Handle(context.Background(), msg)
	if err != nil {
		t.Fatalf("the handler ran, but the caller got %v", err)
	}
	res := resultOf(t, e.receive(e.caller, raw))
	if res.Status != capability.StatusSuccess || runs.Load() != 1 || store.finishes.Load() == 0 {
		t.Fatalf("result %+v after %d runs and %d Finish attempts", res, runs.Load(), store.finishes.Load())
	}
	raw, err = e.agent.Handle(context.Background(), msg)
	if err != nil {
		t.Fatalf("retry: %v", err)
	}
	res = resultOf(t, e.receive(e.caller, raw))
	if res.Status == capability.StatusSuccess || res.Error == nil || res.Error.Name != "outcome_unknown" || runs.Load() != 1 {
		t.Fatalf("retry answered %+v after %d runs", res, runs.Load())
	}
}

// TestResultOverQuotaIsNeverSentUnrecorded: a result the ledger cannot
// hold (the caller's quota) is withheld and answered result_too_large,
// which is recorded and replayed byte for byte: also with the longest
// thread_id it echoes (threat: a caller filling its own quota and padding
// thread_id to receive results the quota withholds, with nothing recorded
// for replays; thread_id is at most amp.MaxRefBytes, so the small answer
// always fits the ledger's smallest reply reserve). The handler runs once;
// a retry is never the full result.
func TestResultOverQuotaIsNeverSentUnrecorded(t *testing.T) {
	for _, threadLen := range []int{0, amp.MaxRefBytes} {
		t.Run(fmt.Sprintf("thread_id of %d bytes", threadLen), func(t *testing.T) {
			const id = "org.agentries.code-review:2.1.0"
			var runs atomic.Int64
			e := newEnv(t, withHandler(id, func(ctx context.Context, p any) (any, error) {
				runs.Add(1)
				return map[string]any{"issues": []any{}, "version": strings.Repeat("S", 3000)}, nil
			}), withConfig(func(c *Config) {
				c.Ledger = memoryLedger(t, func() time.Time { return t0 }, ledger.Limits{Budget: 1500, PerCaller: 1500, ReplyReserve: 1024})
			}))
			s, err := amp.NewSender(amp.SenderConfig{Identity: e.caller, Rand: rand.Reader, Now: e.clock.Now})
			if err != nil {
				t.Fatal(err)
			}
			var thread []byte
			if threadLen > 0 {
				thread = make([]byte, threadLen)
			}
			_, msg, err := s.Seal(context.Background(), amp.Draft{Type: amp.TypeCapInvoke, To: amp.To(e.provider.DID),
				Body: invokeBody(t, id, goodParams), ThreadID: thread})
			if err != nil {
				t.Fatal(err)
			}
			var first []byte
			for attempt := 0; attempt < 2; attempt++ {
				raw, err := e.agent.Handle(context.Background(), msg)
				if err != nil {
					t.Fatalf("attempt %d: %v", attempt, err)
				}
				res := resultOf(t, e.receive(e.caller, raw))
				if res.Status == capability.StatusSuccess || res.Error == nil {
					t.Fatalf("attempt %d: the %d-byte result was sent although the ledger could not hold it", attempt, len(raw))
				}
				if attempt == 1 && !bytes.Equal(raw, first) {
					t.Fatalf("the retry got %d bytes, not the recorded %d-byte answer replayed", len(raw), len(first))
				}
				first = raw
				if attempt == 0 && res.Error.Name != string(ErrResultTooLarge) {
					t.Fatalf("answered %s, want %s", res.Error.Name, ErrResultTooLarge)
				}
			}
			if runs.Load() != 1 {
				t.Fatalf("the handler ran %d times", runs.Load())
			}
		})
	}
}

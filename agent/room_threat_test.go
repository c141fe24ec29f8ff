package agent

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/ampbundle/ampbundle/agent/ledger"
	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/capability"
)

// roomCapability is the capability the room tests invoke; its output
// schema takes a "version" string of any length.
const roomCapability = "org.agentries.code-review:2.1.0"

// bigResult is a valid code-review result of about n bytes.
func bigResult(n int) map[string]any {
	return map[string]any{"issues": []any{}, "version": strings.Repeat("R", n)}
}

// TestFullLedgerShareRefusesBeforeHandlerRuns: once the share of the
// callers no rule names (`*`) cannot hold another result, the next
// invocation from that group is refused 3005, retryably, before its
// handler runs; every handler that ran has its result recorded, and a
// retry of each gets it byte for byte (threat, issue 29: a full share
// still ran handlers and answered 5004 result_not_recorded — 281 handler
// runs for 280 + 1 invocations, 79 unrecorded, with 150 KB results).
func TestFullLedgerShareRefusesBeforeHandlerRuns(t *testing.T) {
	var runs atomic.Int64
	e := newEnv(t, withHandler(roomCapability, func(ctx context.Context, p any) (any, error) {
		runs.Add(1)
		return bigResult(150 << 10), nil
	}), func(e *env) {
		// The default reservation: min(256 KiB, PerCaller/8).
		e.cfg.Ledger = memoryLedger(t, e.clock.Now, ledger.Limits{Budget: 64 << 20, PerCaller: 2 << 20})
		e.cfg.Policy = openPolicy(e)
	})
	type sent struct {
		from  amp.Identity
		msg   []byte
		reply []byte
	}
	var ok []sent
	refused := 0
	for i := 0; i < 30; i++ {
		stranger := freshIdentity(t)
		_, msg := e.seal(stranger, amp.TypeCapInvoke, invokeBody(t, roomCapability, goodParams))
		before := runs.Load()
		out, err := e.agent.Handle(context.Background(), msg)
		must(t, err)
		reply := e.receive(stranger, out)
		if reply.Type == amp.TypeError {
			eb := errorOf(t, reply)
			if eb.Code != amp.CodeRateLimited || eb.Retry == nil || !*eb.Retry || !strings.Contains(eb.Message, "share") {
				t.Fatalf("invocation %d refused with %d %q (retry %v), want a retryable 3005 %s", i, eb.Code, eb.Message, eb.Retry, ledger.ErrCallerFull)
			}
			if runs.Load() != before {
				t.Fatalf("invocation %d: the handler ran, then the invocation was refused", i)
			}
			refused++
			continue
		}
		if res := resultOf(t, reply); res.Status != capability.StatusSuccess {
			t.Fatalf("invocation %d: the handler ran and the caller got %+v", i, res.Error)
		}
		ok = append(ok, sent{stranger, msg, out})
	}
	if refused == 0 {
		t.Fatal("30 results of 150 KB fit a 2 MiB share: the test proves nothing")
	}
	if int(runs.Load()) != len(ok) {
		t.Fatalf("%d handler runs for %d recorded results", runs.Load(), len(ok))
	}
	for i, s := range ok {
		out, err := e.agent.Handle(context.Background(), s.msg)
		must(t, err)
		if !bytes.Equal(out, s.reply) {
			t.Fatalf("retry %d is not the recorded reply", i)
		}
	}
	if int(runs.Load()) != len(ok) {
		t.Fatal("a retry ran the handler again")
	}
}

// fullDisk is a ledger.WALOptions.Room that refuses every growth of the
// log once full is set: a simulated disk with no free block left, which
// answers ENOSPC as a real one would.
type fullDisk struct{ full atomic.Bool }

func (d *fullDisk) room(int64) error {
	if d.full.Load() {
		return syscall.ENOSPC
	}
	return nil
}

// TestFullDiskRefusesBeforeHandlerRuns: with the write-ahead log on a disk
// that fills up (simulated through the log's Room seam: every growth of
// the file is refused with ENOSPC), handlers that started before are
// answered success and their results are recorded: each retry gets the
// same bytes, never outcome_unknown; a new invocation is refused 5004
// ledger_no_space, retryably, before its handler runs (threat, issue 29:
// on a 3 MB file system 30 invocations were answered success and 10 of
// the same messages sent again got outcome_unknown: "reply sent but not
// recorded in the ledger").
func TestFullDiskRefusesBeforeHandlerRuns(t *testing.T) {
	const inFlight = 20 // 20 reservations of 128 KiB: past the log's 1 MiB spare reserve
	disk := &fullDisk{}
	var runs atomic.Int64
	entered, gate := make(chan struct{}, inFlight), make(chan struct{})
	e := newEnv(t, withHandler(roomCapability, func(ctx context.Context, p any) (any, error) {
		runs.Add(1)
		select {
		case entered <- struct{}{}:
		default: // after the first inFlight: nobody counts them
		}
		<-gate
		return bigResult(100 << 10), nil
	}), func(e *env) {
		s, err := ledger.OpenWAL(filepath.Join(t.TempDir(), "l.wal"), ledger.WALOptions{
			Limits: ledger.Limits{ReplyReserve: 128 << 10}, Now: e.clock.Now, Room: disk.room})
		must(t, err)
		l, err := ledger.New(s, ledger.Options{Now: e.clock.Now})
		must(t, err)
		t.Cleanup(func() { l.Close() })
		e.cfg.Ledger = l
	})
	type sent struct{ msg, reply []byte }
	msgs := make([][]byte, inFlight)
	replies := make([][]byte, inFlight)
	var wg sync.WaitGroup
	for i := range msgs {
		_, msgs[i] = e.seal(e.caller, amp.TypeCapInvoke, invokeBody(t, roomCapability, goodParams))
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := e.agent.Handle(context.Background(), msgs[i])
			if err != nil {
				t.Error(err)
			}
			replies[i] = out
		}()
	}
	for range inFlight {
		<-entered // every handler runs: each reserved its result's room
	}
	disk.full.Store(true)
	close(gate)
	wg.Wait()
	var ok []sent
	for i, out := range replies {
		if res := resultOf(t, e.receive(e.caller, out)); res.Status != capability.StatusSuccess {
			t.Fatalf("invocation %d, running when the disk filled: %+v", i, res.Error)
		}
		ok = append(ok, sent{msgs[i], out})
	}
	// New invocations take what spare zeros the log has; then refusals.
	refused := 0
	for i := 0; i < 40 && refused < 3; i++ {
		_, msg := e.seal(e.caller, amp.TypeCapInvoke, invokeBody(t, roomCapability, goodParams))
		before := runs.Load()
		out, err := e.agent.Handle(context.Background(), msg)
		must(t, err)
		reply := e.receive(e.caller, out)
		if reply.Type == amp.TypeError {
			eb := errorOf(t, reply)
			if eb.Code != amp.CodeOverloaded || eb.Retry == nil || !*eb.Retry || !strings.Contains(eb.Message, "disk") {
				t.Fatalf("refused with %d %q (retry %v), want a retryable 5004 %s", eb.Code, eb.Message, eb.Retry, ledger.ErrNoSpace)
			}
			if runs.Load() != before {
				t.Fatal("the handler ran, then the invocation was refused")
			}
			refused++
			continue
		}
		if res := resultOf(t, reply); res.Status != capability.StatusSuccess {
			t.Fatalf("a new invocation on a full disk: %+v", res.Error)
		}
		ok = append(ok, sent{msg, out})
	}
	if refused == 0 {
		t.Fatal("40 results of 100 KB fit a full disk: the test proves nothing")
	}
	if int(runs.Load()) != len(ok) {
		t.Fatalf("%d handler runs for %d results answered", runs.Load(), len(ok))
	}
	// Every success was recorded: the same messages again get the same
	// bytes, none outcome_unknown, and nothing runs again.
	for i, s := range ok {
		out, err := e.agent.Handle(context.Background(), s.msg)
		must(t, err)
		if !bytes.Equal(out, s.reply) {
			res := resultOf(t, e.receive(e.caller, out))
			t.Fatalf("retry %d: not the reply sent (%+v)", i, res.Error)
		}
	}
	if int(runs.Load()) != len(ok) {
		t.Fatal("a retry ran the handler again")
	}
}

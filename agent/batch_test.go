package agent

import (
	"bytes"
	"context"
	"crypto/rand"
	"sync"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/client"
)

const reviewID = "org.agentries.code-review:2.1.0"

// batchOf seals a BATCH from id carrying items.
func (e *env) batchOf(id amp.Identity, items ...[]byte) (*amp.Message, []byte) {
	e.t.Helper()
	body, err := amp.Marshal(amp.BatchBody{Items: items})
	if err != nil {
		e.t.Fatal(err)
	}
	return e.seal(id, amp.TypeBatch, body)
}

// batchReplies sends a batch and returns the verified reply and its items,
// each verified.
func (e *env) batchReplies(id amp.Identity, container []byte) (*amp.Message, []*amp.Message, [][]byte) {
	e.t.Helper()
	raw, err := e.agent.Handle(context.Background(), container)
	if err != nil {
		e.t.Fatalf("handle: %v", err)
	}
	reply := e.receive(id, raw)
	if reply.Type != amp.TypeBatch {
		e.t.Fatalf("reply to a batch is %s, want BATCH", reply.Type)
	}
	b, err := amp.DecodeBatch(reply.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	items := make([]*amp.Message, len(b.Items))
	for i, it := range b.Items {
		items[i] = e.receive(id, it)
	}
	return reply, items, b.Items
}

func TestBatchCorruptThirdItemGetsErrorWithBatchIndexOthersRun(t *testing.T) {
	e := newEnv(t)
	r1, m1 := e.seal(e.caller, amp.TypeCapInvoke, invokeBody(t, reviewID, goodParams))
	r2, m2 := e.seal(e.caller, amp.TypeCapInvoke, invokeBody(t, reviewID, goodParams))
	corrupt := append([]byte(nil), m2...)
	corrupt[len(corrupt)/2] ^= 0xff
	c, container := e.batchOf(e.caller, m1, m2, corrupt)
	reply, items, _ := e.batchReplies(e.caller, container)
	if !bytes.Equal(reply.ReplyTo, c.ID[:]) {
		t.Fatal("the batch reply does not answer the container")
	}
	if len(items) != 3 {
		t.Fatalf("%d replies for 3 items", len(items))
	}
	for i, r := range []*amp.Message{r1, r2} {
		if !bytes.Equal(items[i].ReplyTo, r.ID[:]) {
			t.Fatalf("reply %d is not the reply to item %d", i, i)
		}
		if res := resultOf(t, items[i]); res.Status != "success" {
			t.Fatalf("item %d: %+v", i, res)
		}
	}
	eb := errorOf(t, items[2])
	if eb.BatchIndex == nil || *eb.BatchIndex != 2 || !bytes.Equal(items[2].ReplyTo, c.ID[:]) {
		t.Fatalf("corrupt item: %+v reply_to %x", eb, items[2].ReplyTo)
	}
	if n := e.count(reviewID).Load(); n != 2 {
		t.Fatalf("handler ran %d times, want 2", n)
	}
}

func TestReplayedBatchReplaysEachItemWithoutRunningAgain(t *testing.T) {
	e := newEnv(t)
	_, m1 := e.seal(e.caller, amp.TypeCapInvoke, invokeBody(t, reviewID, goodParams))
	_, m2 := e.seal(e.caller, amp.TypeCapQuery, mustQuery(t))
	_, container := e.batchOf(e.caller, m1, m2)
	_, _, first := e.batchReplies(e.caller, container)
	_, _, again := e.batchReplies(e.caller, container)
	if len(first) != 2 || len(again) != 2 {
		t.Fatalf("replies: %d then %d", len(first), len(again))
	}
	for i := range first {
		if !bytes.Equal(first[i], again[i]) {
			t.Fatalf("item %d reply differs on replay", i)
		}
	}
	// Sent alone, an item already seen in a batch replays too.
	alone, err := e.agent.Handle(context.Background(), m1)
	if err != nil || !bytes.Equal(alone, first[0]) {
		t.Fatalf("item sent alone after the batch: %v", err)
	}
	if n := e.count(reviewID).Load(); n != 1 {
		t.Fatalf("handler ran %d times, want 1", n)
	}
}

func TestBatchCannotSmuggleAnotherSendersItemPastPolicy(t *testing.T) {
	e := newEnv(t)
	_, mine := e.seal(e.caller, amp.TypeCapInvoke, invokeBody(t, reviewID, goodParams))
	_, theirs := e.seal(e.stranger, amp.TypeCapInvoke, invokeBody(t, reviewID, goodParams))
	_, container := e.batchOf(e.caller, mine, theirs)
	raw, err := e.agent.Handle(context.Background(), container)
	if err != nil {
		t.Fatal(err)
	}
	b, err := amp.DecodeBatch(e.receive(e.caller, raw).Body)
	if err != nil || len(b.Items) != 2 {
		t.Fatalf("%v %d", err, len(b.Items))
	}
	// The stranger's item is judged as the stranger's: refused, and its
	// reply is addressed to the stranger, not to the container's sender.
	m := e.receive(e.stranger, b.Items[1])
	if eb := errorOf(t, m); eb.Code != amp.CodeUnauthorized || !m.To.Contains(e.stranger.DID) {
		t.Fatalf("stranger's item: %+v to %v", eb, m.To)
	}
	if n := e.count(reviewID).Load(); n != 1 {
		t.Fatalf("handler ran %d times, want 1", n)
	}
}

func TestBatchLimitsAndNesting(t *testing.T) {
	e := newEnv(t)
	_, inner := e.batchOf(e.caller, mustPing(t, e))
	_, nested := e.batchOf(e.caller, inner)
	_, items, _ := e.batchReplies(e.caller, nested)
	if len(items) != 1 || errorOf(t, items[0]).Code != amp.CodeInvalidMessage {
		t.Fatalf("nested batch: %d items", len(items))
	}
	many := make([][]byte, MaxBatchItems+1)
	for i := range many {
		many[i] = []byte{0xf6}
	}
	_, big := e.batchOf(e.caller, many...)
	raw, err := e.agent.Handle(context.Background(), big)
	if err != nil {
		t.Fatal(err)
	}
	if eb := errorOf(t, e.receive(e.caller, raw)); eb.Code != amp.CodeInvalidMessage || eb.BatchIndex != nil {
		t.Fatalf("oversized batch: %+v", eb)
	}
}

func mustPing(t *testing.T, e *env) []byte {
	_, m := e.seal(e.caller, amp.TypePing, nil)
	return m
}

func mustQuery(t *testing.T) []byte {
	b, err := amp.Marshal(map[string]any{"filter": map[string]any{"capability": "org.agentries.code-review"}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestReportsAreNeverAnsweredNotEvenWithAnError(t *testing.T) {
	var mu sync.Mutex
	var got []client.Receipt
	e := newEnv(t, withConfig(func(c *Config) {
		c.Receipts = func(ctx context.Context, r client.Receipt) { mu.Lock(); got = append(got, r); mu.Unlock() }
	}))
	ref := make([]byte, 16)
	rand.Read(ref)
	send := func(typ amp.Type, body []byte, replyTo []byte) ([]byte, error) {
		s, err := amp.NewSender(amp.SenderConfig{Identity: e.caller, Rand: rand.Reader, Now: e.clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		_, b, err := s.Seal(context.Background(), amp.Draft{Type: typ, To: amp.To(e.provider.DID), Body: body, ReplyTo: replyTo})
		if err != nil {
			t.Fatal(err)
		}
		return e.agent.Handle(context.Background(), b)
	}
	ack, _ := amp.Marshal(amp.AckBody{AckSource: amp.AckFromRecipient, ReceivedAt: 1})
	errBody, _ := amp.Marshal(amp.ErrorBodyOf(amp.NewError(amp.CodeInternalError, "boom")))
	procOK, _ := amp.Marshal(amp.ProcOKBody{})
	for _, c := range []struct {
		name      string
		typ       amp.Type
		body      []byte
		replyTo   []byte
		delivered bool
	}{
		{"ack", amp.TypeAck, ack, ref, true},
		{"proc_ok", amp.TypeProcOK, procOK, ref, true},
		{"proc_fail", amp.TypeProcFail, []byte{0xa0}, ref, true},
		{"error", amp.TypeError, errBody, ref, true},
		{"processing", amp.TypeProcessing, []byte{0xf6}, ref, true},
		{"ack with a malformed body", amp.TypeAck, []byte{0xa0}, ref, false},
		{"error with a malformed body", amp.TypeError, []byte{0x01}, ref, false},
		{"ack without reply_to", amp.TypeAck, ack, nil, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			mu.Lock()
			before := len(got)
			mu.Unlock()
			reply, err := send(c.typ, c.body, c.replyTo)
			if reply != nil || err != nil {
				t.Fatalf("a report was answered: %x %v", reply, err)
			}
			mu.Lock()
			n := len(got) - before
			mu.Unlock()
			if (n == 1) != c.delivered {
				t.Fatalf("delivered %d receipts, want delivered=%v", n, c.delivered)
			}
		})
	}
	// A batch of reports is not answered either.
	_, a1 := e.seal(e.caller, amp.TypeAck, ack)
	_, container := e.batchOf(e.caller, a1)
	if reply, err := e.agent.Handle(context.Background(), container); reply != nil || err != nil {
		t.Fatalf("a batch of reports was answered: %v", err)
	}
}

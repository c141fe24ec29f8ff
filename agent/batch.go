package agent

import (
	"context"

	"github.com/ampbundle/ampbundle/amp"
)

// MaxBatchItems caps the items of one BATCH; a larger batch is refused as a
// whole (1001 batch_too_large) before any item is looked at.
const MaxBatchItems = 256

// batchKey marks the context of an item handled inside a BATCH.
type batchKey struct{}

// handleBatch answers a verified BATCH addressed to this agent (RFC 001
// §4.5). Each item goes through Handle exactly as if it had arrived alone
// (its own signature, recipient check, idempotency ledger entry and
// policy), in item order. The synchronous reply is a signed BATCH whose
// items are the replies, in item order: the reply to an item (reply_to =
// the item's id), an item that needs no reply (ACK, PROC_*, ERROR,
// PROCESSING) contributes nothing, and an item that cannot be decoded or
// verified is answered by a signed ERROR with reply_to = the container's
// id and batch_index = its index. No reply at all (every item was a
// report) is no reply. The container is not recorded in the ledger: a
// replayed BATCH replays each item from its own entry, so every item
// reply is byte-identical to the first one (the container's signature is
// new). Every item's answer fits the reply: a reply that does not fit is
// replaced by an ERROR batch_reply_too_large, whose room is kept for each
// item not yet answered, and a batch with more items than the reply has
// room for is refused whole (1001 batch_too_large) before any item runs.
// See docs/SPEC-DECISIONS.md (BATCH-1).
func (a *Agent) handleBatch(ctx context.Context, m *amp.Message) ([]byte, error) {
	if ctx.Value(batchKey{}) != nil {
		return a.replyError(ctx, m, amp.Named(amp.CodeInvalidMessage, "nested_batch", "a batch item must not be a batch"))
	}
	b, err := amp.DecodeBatch(m.Body)
	if err != nil {
		return a.replyError(ctx, m, err)
	}
	if len(b.Items) > MaxBatchItems {
		return a.replyError(ctx, m, amp.Named(amp.CodeInvalidMessage, "batch_too_large", "a batch carries at most %d items", MaxBatchItems))
	}
	// The replies must fit one message to the sender: the container's
	// own envelope and signature take less than this margin.
	budget := a.maxMessage() - 4096
	// Every item is answered, and an item's reply that does not fit is
	// replaced by an ERROR, which must fit too: the room of that ERROR is
	// kept for each item not yet answered, and a batch with more items
	// than the reply has room for is refused whole, before any item runs
	// (threat: 256 undecodable items, a container under 1 KiB, drew a
	// reply of 95 KiB from an agent whose message limit is 64 KiB).
	room := a.batchItemRoom(m)
	if len(b.Items)*room > budget {
		return a.replyError(ctx, m, amp.Named(amp.CodeInvalidMessage, "batch_too_large",
			"a batch to this agent carries at most %d items: their replies must fit one message", max(budget/room, 0)))
	}
	ictx := context.WithValue(ctx, batchKey{}, true)
	// No item is started after the batch's deadline (Config.MaxBatchDuration):
	// those are answered retryably, unprocessed, so that one request cannot
	// hold its connection for every item's full timeout in turn.
	deadline := a.cfg.Now().Add(a.cfg.MaxBatchDuration)
	replies := make([][]byte, 0, len(b.Items))
	size := 0
	// Each item takes a CPU slot of its own in Handle, counted against its
	// peer like any message: the container waits away meanwhile
	// (admission.Fair.Away), uncounted, so that concurrent batches cannot
	// hold every slot while their items wait for one, nor their items skip
	// their peer's share (threat: 4 batches admitted while their address
	// was alone ran their items in every free slot for up to
	// MaxBatchDuration); and not keeping its peer active, which its items
	// do while inside, parked or waiting (threat: parked, a container
	// whose one item was a copy waiting for another network's invocation
	// kept its network active with nothing inside, AGENT-34). It waits
	// once for its items, not once an item: between two items it only
	// counts bytes, and taking a slot again after each item made it queue
	// for one 32 times a batch, on the admission lock each time (a BATCH
	// item at 84 % of a message sent alone on 16 cores,
	// docs/PERFORMANCE.md). It takes a slot again only to sign: an item's
	// ERROR (signing is work the slots bound) and, at the end, the reply.
	resume := a.cpu.Away(ctx)
	held := func() {
		if resume != nil {
			resume()
			resume = nil
		}
	}
	defer held()
	// running reports whether items may still be started: before the
	// batch's deadline, and while its caller waits.
	running := func() bool { return a.cfg.Now().Before(deadline) && ctx.Err() == nil }
	// itemError signs the ERROR of item i holding a slot, then waits away
	// again while items may still run. Once none may, the container keeps
	// the slot for the rest: the ERRORs left are signed one after the
	// other, not each after a wait for a slot (which no deadline bounds).
	itemError := func(i int, ierr error) ([]byte, error) {
		held()
		reply, err := a.batchItemError(ctx, m, i, ierr)
		if running() {
			resume = a.cpu.Away(ctx)
		}
		return reply, err
	}
	for i, item := range b.Items {
		var reply []byte
		var err error
		if running() {
			reply, err = a.Handle(ictx, item)
		} else if ctx.Err() != nil {
			// The caller is gone: no reply will reach it, so none is
			// signed for the items left.
			return nil, amp.Wrap(amp.CodeTimeout, ctx.Err(), "the batch's caller went away")
		} else {
			err = amp.Named(amp.CodeTimeout, "batch_deadline_exceeded",
				"the batch ran out of time before this item was started; nothing of it ran: send it again")
		}
		if err != nil {
			if reply, err = itemError(i, err); err != nil {
				return nil, err
			}
		}
		if reply == nil {
			continue
		}
		if size+len(reply)+16+(len(b.Items)-1-i)*room > budget {
			// The item ran and its reply is in the ledger: sent alone, the
			// same item gets it back. Its ERROR fits in the room kept for it.
			a.log.Warn("batch reply over the message limit; item answered with an error", "from", m.From, "id", m.ID.String(), "batch_index", i)
			if reply, err = itemError(i, errBatchReplyTooLarge()); err != nil {
				return nil, err
			}
		}
		size += len(reply) + 16
		replies = append(replies, reply)
	}
	held()
	if len(replies) == 0 {
		return nil, nil
	}
	body, err := amp.Marshal(amp.BatchBody{Items: replies})
	if err != nil {
		return nil, amp.Wrap(amp.CodeInternalError, err, "cannot encode the batch reply")
	}
	return a.reply(ctx, m, amp.TypeBatch, body)
}

// errBatchReplyTooLarge is the ERROR that answers a BATCH item whose reply
// does not fit the batch's reply.
func errBatchReplyTooLarge() error {
	return amp.Named(amp.CodeOverloaded, "batch_reply_too_large",
		"the replies do not fit one message; send this item alone to get its reply")
}

// batchEnvelope bounds what a signed ERROR to a BATCH item takes beyond
// its body, the two DIDs and the thread_id: the other envelope fields,
// their keys, the reply_to, the signature and, when encrypted, the
// algorithm, mode, nonce and tag (about 330 bytes; amp/message.go).
const batchEnvelope = 512

// batchItemRoom is the room one item's answer is sure to have in the reply
// to the BATCH m: the signed ERROR batch_reply_too_large at the largest
// batch_index, and its framing in the reply's item array (16).
func (a *Agent) batchItemRoom(m *amp.Message) int {
	body, err := amp.Marshal(amp.BatchItem{Index: MaxBatchItems, Err: errBatchReplyTooLarge()}.ErrorBody())
	if err != nil {
		body = make([]byte, 1024) // not reached: a fixed body always encodes
	}
	return len(body) + len(a.cfg.Identity.DID) + len(m.From) + len(m.ThreadID) + batchEnvelope + 16
}

// batchItemError is the signed ERROR about item i of the container m:
// a refusal, not recorded (RefusalTTL).
func (a *Agent) batchItemError(ctx context.Context, m *amp.Message, i int, err error) ([]byte, error) {
	eb := amp.BatchItem{Index: i, Err: err}.ErrorBody()
	body, merr := amp.Marshal(eb)
	if merr != nil {
		return nil, amp.Wrap(amp.CodeInternalError, merr, "cannot encode an error body")
	}
	_, out, err := a.seal(ctx, m, amp.TypeError, body, a.replyTTL(m, true))
	return out, err
}

// maxMessage is the agent's message size cap.
func (a *Agent) maxMessage() int {
	if a.cfg.Limits.MaxMessageSize > 0 {
		return a.cfg.Limits.MaxMessageSize
	}
	return amp.DefaultMaxMessageSize
}

// Package ledger is the agent's idempotency ledger (RFC 001 §8.4, §16.2;
// RFC 004 §2.2): for each (sender DID, message id) it remembers whether a
// handler has started and, once it has finished, the exact reply bytes, so
// that a duplicate never runs a handler twice and always gets the
// byte-identical reply.
//
// # Use
//
//	s := ledger.StartSent(sender, id, ts, expires) // ts: the message's, verified
//	switch s.State {
//	case ledger.Done:    send s.Reply                      // a replay
//	case ledger.Busy:    wait for s.Wait, then Start again // a concurrent copy runs
//	case ledger.Lost:    s.Ticket.Finish(outcome-unknown result) and send it
//	case ledger.Fresh:   check everything; then
//	                     s.Ticket.Running()  (durable, just before the handler)
//	                     run the handler
//	                     s.Ticket.Finish(reply)  (durable, before sending)
//	                  or s.Ticket.Finish(refusal) without Running: kept in
//	                     memory only, a bounded cache
//	                  or s.Ticket.Abandon()  (retryable refusal: nothing kept)
//	}
//
// # States and transitions
//
// A key is in one of these states. "Durable" states are in the Store (a
// write-ahead log of its own, see OpenWAL and OpenFile, or memory, see
// NewMemory); the others live in the Ledger value of this process only.
// The bbolt file of earlier versions is retired: OpenFile migrates it,
// once and one way, into a new log.
//
//	state      where     meaning
//	absent     -         never seen (or expired and reclaimed)
//	claimed    process   a Ticket is out; nothing written yet
//	volatile   process   answered without running anything (PING, a
//	                     refusal, a query); reply in the bounded cache
//	running    durable   the handler was about to start; no reply yet
//	done       durable   the reply is recorded
//
//	from      event                          to        Start reports
//	absent    Start                          claimed   Fresh (Ticket)
//	claimed   Start (concurrent copy)        claimed   Busy (Wait)
//	claimed   Ticket.Running ok              running   -
//	claimed   Ticket.Running refused (quota) claimed   - (caller refuses, retryable)
//	claimed   Ticket.Finish                  volatile  - (Busy waiters retry: Done)
//	claimed   Ticket.Abandon                 absent    - (Busy waiters retry: Fresh)
//	running   Ticket.Finish ok               done      -
//	running   Start (this process runs it)   running   Busy (Wait)
//	running   Start (no Ticket out: crash)   running   Lost (Ticket, claimed)
//	done      Start                          done      Done (Reply)
//	volatile  Start                          volatile  Done (Reply)
//	volatile  evicted from the cache         absent    -
//	running   expired, swept                 absent    -
//	absent    Ticket.Finish (running ticket) done      - (entry re-created)
//	done      expired, swept                 absent    -
//
// A running entry expires no earlier than the handler's longest run
// (Ticket.Extend, before Running); should it still be reclaimed while the
// handler runs (a clock that jumps), Finish records the reply again
// instead of dropping it.
//
// Lost is the one case where the outcome of a handler is unknown: an
// earlier process marked it running and stopped before recording the
// reply. Running it again could run it twice, so the caller records and
// sends a terminal "outcome unknown" result instead (Ticket.Finish on a
// Lost ticket is durable).
//
// # Quotas
//
// The Store keeps its bytes (keys, records and expiry index, counted with a
// fixed per-entry overhead) within Limits.Budget (default 256 MiB) and each
// sender within Limits.PerCaller; Ledger.SetPrincipal groups senders into
// principals that share one PerCaller (and one share of the volatile
// cache), so that identities that cost nothing to make do not each get one.
//
// Running reserves the room of the largest reply before the handler runs
// (the ticket's Reserve, for a capability whose largest result is its own,
// else Limits.ReplyReserve; Limits.MaxReserve is the most one entry can
// have): in the budget and the sender's share, and, for the
// write-ahead log, on disk (zeros written after the log, which the reply's
// record later overwrites, so that recording it never needs the file to
// grow). It refuses with ErrFull, ErrCallerFull or ErrNoSpace (all
// retryable, see NoRoom), having written nothing, when that room cannot be
// had. Finish records a reply within the reservation and gives back what it
// does not use; it fails then only for an I/O error the disk reports (the
// one degraded case, docs/CLI.md §3.4). A reply larger than the reservation
// is refused (ErrReplyTooLarge), and the caller records a small error result
// instead, which always fits. An abandoned running ticket gives back its
// disk; its entry stays charged to the quotas until it expires.
// Expired entries are reclaimed a few at a time in every commit, and by
// Sweep, once their lifetime has also elapsed on the monotonic clock (a
// wall clock stepped forward and back reclaims nothing early; see
// WALOptions.Now; after StartSent, no sooner than the lifetime the sender
// gave the message, its expiry less its ts, which a clock already ahead at
// the write cannot shorten), so the file stops growing under steady load (the
// write-ahead log is rewritten with its live entries only when its dead
// records exceed a slack, so it never exceeds the budget plus that slack).
//
// # Durability
//
// The log commits in groups: a writer that finds no commit running writes
// everything queued and makes it durable (one write and one fdatasync per
// group, over zeros reserved ahead so that the file's length need not be
// synced), the others wait and form the next group. A group waits for more
// writers only while that pays, judged from what it measures (the spacing
// of arrivals and the time a group takes to sync; see gatherPolicy in
// groupcommit.go, docs/SPEC-DECISIONS.md PERF-1): it runs at once when its
// writer came alone after a group nobody arrived during, when fewer than
// one more writer is predicted within its window, or when all the writers
// the Ledger expects soon (Ledger.Expected: its tickets out of a running
// handler, and the messages on their way to a ticket, Ledger.Expect;
// PERF-5) are queued but a reserve (one per processor plus
// those that arrive during one sync: they keep the processors busy while
// it syncs); otherwise it waits at most the lesser of 2 ms and 8 syncs
// from its oldest writer, and no longer than 4 arrival spacings past the
// latest arrival. No writer is answered before its group is durable. The
// log's records are checksummed per group; a torn last group (a crash
// during its write) is truncated on open, damage before an intact group
// fails the open (ErrLedgerCorrupt), and so does a file holding more
// unexpired entries than the budget can account for; opening allocates by
// the bytes it reads, never by a group's claimed length. A read the file
// system fails is never taken for a torn tail, and a log another user may
// write is refused: both fail the open (ErrLedgerIO), changing nothing. A failed fdatasync,
// or a failed directory sync after a compaction, makes the log refuse
// every write until it is opened again.
// The formats are specified in docs/FORMAT.md.
//
// Only what a handler ran for is written durably: PING, refusals and
// answers of senders the policy does not know go to a bounded in-memory
// cache, which answers their replays while it holds them; after eviction a
// replay is evaluated again, and gives the same refusal (RFC 001 §16.2).
package ledger

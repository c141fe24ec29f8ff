// Package etcdledger is the agent's idempotency ledger on etcd v3, shared
// by the agents of a fleet behind one address (docs/FLEET.md): a
// ledger.SharedStore, so that a message retried onto another node never
// runs its handler twice and every copy gets the byte-identical reply.
//
// Each key (sender, message id) goes through the states of the local
// ledger (docs/FORMAT.md, "Idempotency ledger"), fleet-wide:
//
//   - Start claims the key in one transaction: a claim key under this
//     process's session lease, created only if no process claims the key
//     and its entry is not done. A copy on another node finds the claim
//     and waits (a watch on the claim key, re-claimed at least every
//     Options.WaitPoll) for the reply, then answers it.
//   - Running is one transaction that creates the entry only if it is
//     absent (create revision 0), while the claim holds, and charges the
//     reply's reservation to the sender's usage counter (compared on its
//     mod revision, retried a bounded number of times), all under a lease
//     that ends at the message's expiry plus Options.MaxClockSkew (the
//     fleet's nodes' clocks must agree within it: docs/FLEET.md, "Clocks").
//   - Finish records the reply in the entry, gives back the unused
//     reservation and deletes the claim, in one transaction.
//   - Unclaim deletes the claim, named by its create revision (never a
//     later claim of the key); after a Running whose answer was lost, also
//     the entry it may have made (the handler never started). A delete
//     that fails is retried in the background while the process lives.
//   - A node that dies while its handler runs stops renewing its session
//     lease; etcd deletes its claims, and the next copy finds the entry
//     running without a claimer: Lost, answered "outcome unknown", never
//     run again.
//
// The Claim, Running and Finish transactions of concurrent messages go to
// etcd combined, as one transaction that succeeds only where each alone
// would have (else each is committed again alone): one Raft commit for
// many messages (docs/SPEC-DECISIONS.md FLEET-10).
//
// Every etcd call has a deadline (Options.OpTimeout); an etcd that does
// not answer in time (unreachable, no quorum, slow) is a refusal before the
// handler runs, which the agent answers 5002, retryable. The keys, values
// and leases are specified in docs/FORMAT.md, "Ledger on etcd".
//
// Tests and benchmarks run a real 3-member cluster on loopback
// (package etcdtest; scripts/ci-etcd.sh installs etcd).
package etcdledger

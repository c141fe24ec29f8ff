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
//     and its entry is not done, and with it, in a nested transaction,
//     the running entry itself (create revision 0), with the default
//     reservation charged to the sender's usage counter (compared on the
//     mod revisions of the principal's counters as this process last
//     wrote them), under a lease that ends at the message's expiry plus
//     Options.MaxClockSkew (the fleet's nodes' clocks must agree within
//     it: docs/FLEET.md, "Clocks"). The claim is the running record
//     (docs/SPEC-DECISIONS.md FLEET-11). A copy on another node finds the
//     claim and waits (a watch on the claim key, re-claimed at least
//     every Options.WaitPoll) for the reply, then answers it.
//   - Running writes nothing when the entry made with the claim covers
//     the reservation and expiry asked for; a larger reservation or a
//     later bucket is one transaction that grows the entry; a claim made
//     without an entry (no room in the share or budget, or counters
//     changed by another node) creates it then, or refuses by name.
//   - Finish records the reply in the entry, gives back the unused
//     reservation and deletes the claim, in one transaction.
//   - Unclaim deletes the claim, named by its create revision (never a
//     later claim of the key); unless a Running succeeded under it, also
//     the running entry made with or after it, with its charge given back
//     (the handler never started: a refused message leaves no record). A
//     delete that fails is retried in the background while the process
//     lives; so is the undoing of a Claim whose answer was lost (found by
//     its claim value).
//   - A node that dies after its claim stops renewing its session lease;
//     etcd deletes its claims, and the next copy finds the entry running
//     without a claimer: Lost, answered "outcome unknown", never run
//     again, whether or not its handler had started.
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

package etcdledger

import (
	"bytes"
	"context"
	"crypto/sha256"
	"strconv"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ampbundle/ampbundle/agent/ledger"
	"github.com/ampbundle/ampbundle/amp"
)

// MarkRunning implements ledger.Store.
func (s *Store) MarkRunning(k ledger.Key, expires time.Time) error {
	return s.MarkRunningWithin(k, expires, 0)
}

// reserveOf is the reservation of an entry marked with reserve.
func (s *Store) reserveOf(reserve int64) int64 {
	if reserve <= 0 {
		reserve = s.lim.ReplyReserve
	}
	return min(max(reserve, ledger.MinReplyReserve), MaxReply)
}

// MarkRunningWithin implements ledger.ReservingStore. Under a claim of
// this process that made the running entry (FLEET-11), it writes nothing
// when the entry's reservation and bucket cover reserve and expires, and
// grows the entry in one transaction otherwise (grow); else markNew
// creates the entry.
func (s *Store) MarkRunningWithin(k ledger.Key, expires time.Time, reserve int64) error {
	reserve = s.reserveOf(reserve)
	s.mu.Lock()
	ci, claimed := s.claims[k]
	s.mu.Unlock()
	if !claimed || ci.entry == nil {
		return s.markNew(k, ci, claimed, expires, reserve)
	}
	if !s.sess.holds(ci.lease) {
		// The session lease ended: etcd deleted the claim, and another
		// process may have answered the entry "outcome unknown".
		return amp.Named(amp.CodeUnavailable, ErrClaimLost, "this agent's claim on the message expired before its handler could start; retry")
	}
	if err := s.claimHolds(k, ci); err != nil {
		return err
	}
	ce := ci.entry
	if end := bucketEnd(s.o.Now(), expires); reserve > ce.e.reserve || end > ce.e.end {
		return s.grow(k, ci, expires, reserve, end)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.claims[k]; !ok || c.rev != ci.rev {
		return amp.Named(amp.CodeInternalError, ledger.ErrTicketUsed, "ledger claim given up")
	}
	ci.ran = true
	s.claims[k] = ci
	s.running[k] = entryRef{rev: ce.rev, e: ce.e, charged: true, counter: ce.n, counterRev: ce.nrev, limit: reserve}
	return nil
}

// markNew creates k's running entry: one transaction creates it only if
// it is absent (create revision 0), while this process's claim holds (its
// create revision), and adds its cost to the principal's usage counter of
// the entry's expiry bucket, compared on the mod revisions of all the
// principal's counters (no other writer since they were summed); a
// conflict is retried (at most 16 times).
func (s *Store) markNew(k ledger.Key, ci claimInfo, claimed bool, expires time.Time, reserve int64) error {
	dl := s.lockBy()
	now := s.o.Now()
	e, cost, err := s.newEntry(k, now, expires, reserve, nil)
	if err != nil {
		return err
	}
	pl, err := s.hot.lock(usagePrefix(s.prefix, hexOf(e.principal)), dl)
	if err != nil {
		return err
	}
	defer s.hot.unlock(pl)
	return s.makeEntry(k, ci, claimed, e, cost, nil, pl)
}

// newEntry is the running entry of k that markNew makes, with its cost,
// or ErrFull when it is over this process's share of the budget. old is
// the entry it replaces (remake: one that vanished with its lease, whose
// charge leaves the tally when the new one is made), nil for none: what
// of old's charge the tally still holds is left out of the check, so
// that an entry is never refused for its own earlier charge.
func (s *Store) newEntry(k ledger.Key, now, expires time.Time, reserve int64, old *entryRef) (entry, int64, error) {
	cost := entryCost(k, reserve)
	var freed, freedEnd int64
	if old != nil && old.charged {
		freed, freedEnd = entryCost(k, old.e.reserve), old.e.end
	}
	if s.budgetFull(now, cost, freed, freedEnd) {
		return entry{}, 0, amp.Named(amp.CodeOverloaded, ledger.ErrFull, "the agent's idempotency ledger is full; retry later")
	}
	ph := sha256.Sum256([]byte(s.principalOf(k.Sender)))
	e := entry{state: stateRunning, expires: expires, reserve: reserve, end: bucketEnd(now, expires)}
	copy(e.principal[:], ph[:16])
	return e, cost, nil
}

// vanished is the charge of a running entry that went with its bucket
// lease while its counter stayed (remake), or the old charge of an entry
// that grow moves: cost, added to counter at revision rev.
type vanished struct {
	counter   string
	cost, rev int64
}

// takes is what of v's charge the counters snap still hold: at most
// v.cost, and only on the counter made at or before v.rev (the one it
// was added to; a counter made again since holds none of it).
func (v *vanished) takes(snap *usageSnap) int64 {
	if v == nil {
		return 0
	}
	if c := snap.creates[v.counter]; c == 0 || c > v.rev {
		return 0
	}
	return min(v.cost, snap.vals[v.counter])
}

// makeEntry commits markNew's transaction for e (costing cost). pl is the
// principal's lock, held by the caller, whose counters are the first
// guess; nil when the caller does not hold it (remake). With gone, a
// remake (review 35): the handler ran, so no share or counter refuses
// the entry. It is not checked against the principal's share (it was
// admitted once, when the vanished entry was made, and costs no more
// than that entry did), and only the two counters it writes are read for
// every try (remakeCounters), never the principal's others, and compared
// on their mod revisions: the vanished entry's charge that its counter
// still holds is taken off it, and the remade entry's cost added to its
// own; a counter that does not decode is left as it is, and when they
// kept changing the last try writes neither (FLEET-14's rule: only that
// charge or refund is lost; the entry is then uncounted, and written so
// (stateUncounted, FLEET-22), so that no Finish on any process refunds
// anything off a counter that never held it). A try that fails on
// another's write is retried as one that fails on a stale guess.
func (s *Store) makeEntry(k ledger.Key, ci claimInfo, claimed bool, e entry, cost int64, gone *vanished, pl *principalLock) error {
	phex := hexOf(e.principal)
	m := &making{k: k, ci: ci, claimed: claimed, e: e, cost: cost, gone: gone, pl: pl,
		ks: keysOf(s.prefix, k), u: usagePrefix(s.prefix, phex), counter: usageKey(s.prefix, phex, e.end)}
	m.read = s.counterRead(m.u)
	leaseGone := false
	for attempt := 0; attempt < maxRetries; attempt++ {
		lease, err := s.leases.get(e.end)
		if err != nil {
			return err
		}
		snap, charged, err := s.makeCounters(m, attempt)
		if err != nil {
			return err // etcd did not answer (retryable), or over the share
		}
		cmp, ops, n := m.txnOf(snap, charged, lease)
		r, err := s.txn("mark", k, m.u, cmp, ops,
			[]clientv3.Op{clientv3.OpGet(m.ks.entry), clientv3.OpGet(m.ks.claim)})
		if leaseNotFound(err) {
			s.leases.drop(e.end)
			if !leaseGone && gone != nil {
				// The cached lease went with the vanished entry: made
				// again, once, not counted as contention (the last try
				// stays the one that cannot fail on the counters).
				leaseGone, attempt = true, attempt-1
			}
			continue
		}
		if err != nil {
			return err // the entry may exist: Unclaim deletes it (FLEET-7)
		}
		if r.Succeeded {
			s.made(m, r, n, charged)
			return nil
		}
		if err := m.refused(r); err != nil {
			return err
		}
		contended(attempt)
	}
	return contendedErr()
}

// making is one makeEntry call: the entry e of k to make, costing cost,
// under the claim ci (claimed: one of this process), the vanished entry
// it replaces (gone: a remake; nil for none) and the principal's lock pl
// (nil: not held by the caller), with the etcd keys they name: ks, the
// principal's usage prefix u and the counter of e's bucket, and read,
// the read of u's counters (counterRead).
type making struct {
	k       ledger.Key
	ci      claimInfo
	claimed bool
	e       entry
	cost    int64
	gone    *vanished
	pl      *principalLock
	ks      keys
	u       string
	counter string
	read    clientv3.Op
}

// makeCounters is what makeEntry's try attempt compares on, and what its
// transaction writes from: the counters snap, and charged, whether the
// entry's cost is added to its counter. A remake reads only its two
// counters (remakeCounters), and its last try none at all; a first
// making is checked against the principal's share (shareCounters).
func (s *Store) makeCounters(m *making, attempt int) (snap *usageSnap, charged bool, err error) {
	if m.gone != nil && attempt == maxRetries-1 {
		// Its counters kept changing: the last try makes the entry
		// without its charge rather than lose the reply.
		return &usageSnap{vals: map[string]int64{}, mods: map[string]int64{}, creates: map[string]int64{}}, false, nil
	}
	if m.gone != nil {
		return s.remakeCounters(m.counter, m.gone.counter)
	}
	if snap, err = s.shareCounters(m, attempt); err != nil {
		return nil, false, err
	}
	return snap, true, nil
}

// shareCounters is the principal's counters that a first making (no
// remake) checks the principal's share on and compares on: as read with
// the claim, or as this process last wrote them (pl's, when later), the
// first guess; read again on a later try, without the lock or a guess,
// and when a guess not read with the claim is over the share (never
// refuse on a guess). callerFull when the entry is over the share.
func (s *Store) shareCounters(m *making, attempt int) (*usageSnap, error) {
	snap := m.ci.usage
	if m.pl != nil && m.pl.snap != nil && (snap == nil || m.pl.snap.rev > snap.rev) {
		snap = m.pl.snap // this process's own later write of the counters
	}
	over := func(sn *usageSnap) bool { return sn.sum+m.cost > s.lim.PerCaller }
	guess := snap != nil && snap != m.ci.usage // not read with the claim
	// Never refuse on a guess.
	if m.pl == nil || attempt > 0 || snap == nil || guess && over(snap) {
		var err error
		if snap, err = s.readUsage("mark", m.u); err != nil {
			return nil, err
		}
		if m.pl != nil {
			m.pl.snap = snap
		}
	}
	if over(snap) {
		return nil, callerFull()
	}
	return snap, nil
}

// txnOf is the transaction of a try of m on the counters snap, and n,
// the value it writes to the entry's counter: the entry created under
// lease only if absent, while the claim holds, its counter unchanged
// (and, for a first making, all the principal's counters: the share was
// checked on their sum), its cost added to its counter when charged, and
// what of the vanished entry's charge the counters still hold taken off.
func (m *making) txnOf(snap *usageSnap, charged bool, lease clientv3.LeaseID) ([]clientv3.Cmp, []clientv3.Op, int64) {
	take := m.gone.takes(snap)
	n := snap.vals[m.counter] + m.cost
	cmp := []clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(m.ks.entry), "=", 0)}
	if _, read := snap.mods[m.counter]; m.gone == nil || read {
		cmp = append(cmp, clientv3.Compare(clientv3.ModRevision(m.counter), "=", snap.mods[m.counter])) // not deleted since: FLEET-19
	}
	if m.gone == nil { // the share was checked on the sum of them all
		cmp = append(cmp, clientv3.Compare(clientv3.ModRevision(m.u), "<", snap.rev+1).WithPrefix())
	}
	if m.claimed {
		cmp = append(cmp, clientv3.Compare(clientv3.CreateRevision(m.ks.claim), "=", m.ci.rev))
	}
	e := m.e
	e.uncounted = !charged // marked so for every process (FLEET-22)
	ops := []clientv3.Op{clientv3.OpPut(m.ks.entry, string(e.encode()), clientv3.WithLease(lease))}
	if take > 0 && m.gone.counter == m.counter {
		n -= take
	} else if take > 0 { // kept on its own lease
		cmp = append(cmp, clientv3.Compare(clientv3.ModRevision(m.gone.counter), "=", snap.mods[m.gone.counter]))
		ops = append(ops, takeOff(m.gone.counter, snap.vals[m.gone.counter]-take))
	}
	if charged {
		ops = append(ops, clientv3.OpPut(m.counter, itoa(n), clientv3.WithLease(lease)))
	}
	if m.pl != nil { // the counters after it, for the next holder's guess
		ops = append(ops, m.read)
	}
	return cmp, ops, n
}

// made records in this process the entry that m's transaction r made:
// running, charged to its counter (at n) unless not charged (then
// uncounted), its cost in the tally, and the claim's handler ran.
func (s *Store) made(m *making, r *clientv3.TxnResponse, n int64, charged bool) {
	if m.pl != nil {
		m.pl.learn(s, r.Responses[len(r.Responses)-1], r.Header.Revision)
	}
	s.mu.Lock()
	ref := entryRef{rev: r.Header.Revision, e: m.e, charged: true, counter: n, counterRev: r.Header.Revision, limit: m.e.reserve}
	if !charged { // written as such (txnOf)
		ref.counter, ref.counterRev, ref.uncounted = 0, 0, true
		ref.e.uncounted = true
	}
	s.running[m.k] = ref
	s.charge(m.e.end, m.cost, 1)
	if c, ok := s.claims[m.k]; ok && c.rev == m.ci.rev {
		c.ran = true
		s.claims[m.k] = c
	}
	s.mu.Unlock()
}

// refused is the refusal of a try of m that failed (r) on its entry
// (there already) or its claim (gone); nil when it failed on the
// counters, to be tried again.
func (m *making) refused(r *clientv3.TxnResponse) error {
	if one(r.Responses[0]) != nil {
		return amp.Named(amp.CodeInternalError, ledger.ErrTicketUsed, "ledger entry already exists")
	}
	if c := one(r.Responses[1]); m.claimed && (c == nil || c.CreateRevision != m.ci.rev) {
		return claimLostBeforeRun()
	}
	return nil
}

// grow gives the running entry made with ci (FLEET-11) a larger
// reservation or a later bucket, in one transaction while the claim holds
// and the entry is unchanged: the entry is written again (under the later
// bucket's lease) and its charge moved to the counter of its bucket with
// the new cost, compared on the principal's counters as markNew does;
// the old cost is taken off only the counter that holds it (made at or
// before the entry's charge: FLEET-23), a write that keeps that
// counter's lease (takeOff), so that the later bucket's is the one lease
// it needs (FLEET-24). Rare: a capability whose largest result is above
// the default, or a handler's longest run past the message's expiry
// bucket.
func (s *Store) grow(k ledger.Key, ci claimInfo, expires time.Time, reserve, end int64) error {
	dl := s.lockBy()
	ce := ci.entry
	ne := ce.e
	ne.reserve, ne.end = max(reserve, ce.e.reserve), max(end, ce.e.end)
	if expires.After(ne.expires) {
		ne.expires = expires
	}
	cost := entryCost(k, ne.reserve)
	s.mu.Lock()
	s.pruneTally(s.o.Now())
	full := s.usage.Bytes-ce.cost+cost > s.lim.Budget
	s.mu.Unlock()
	if full {
		return amp.Named(amp.CodeOverloaded, ledger.ErrFull, "the agent's idempotency ledger is full; retry later")
	}
	phex := hexOf(ne.principal)
	u := usagePrefix(s.prefix, phex)
	ks := keysOf(s.prefix, k)
	counter := usageKey(s.prefix, phex, ne.end)
	// The old charge, taken off only the counter made at or before it
	// (never one made again since, its key's lease gone: FLEET-23).
	held := &vanished{counter: ce.counter, cost: ce.cost, rev: ce.rev}
	pl, err := s.hot.lock(u, dl)
	if err != nil {
		return err
	}
	defer s.hot.unlock(pl)
	for attempt := 0; attempt < maxRetries; attempt++ {
		lease, err := s.leases.get(ne.end)
		if err != nil {
			return err
		}
		snap := pl.snap
		over := func(sn *usageSnap) bool { return sn.sum-held.takes(sn)+cost > s.lim.PerCaller }
		if attempt > 0 || snap == nil || over(snap) { // never refuse on a guess
			if snap, err = s.readUsage("mark", u); err != nil {
				return err
			}
			pl.snap = snap
		}
		if over(snap) {
			return callerFull()
		}
		take := held.takes(snap) // the old charge, only where it still is
		vals := map[string]int64{}
		if counter == ce.counter {
			vals[counter] = snap.vals[counter] - take + cost
		} else {
			vals[ce.counter] = snap.vals[ce.counter] - take
			vals[counter] = snap.vals[counter] + cost
		}
		ops := []clientv3.Op{clientv3.OpPut(ks.entry, string(ne.encode()), clientv3.WithLease(lease)),
			clientv3.OpPut(counter, itoa(vals[counter]), clientv3.WithLease(lease))}
		if counter != ce.counter && take > 0 {
			// A refund, as every other: the counter keeps its lease (its
			// last writer's), deleted at 0 (FLEET-19); no lease of the old
			// bucket is needed (FLEET-24).
			ops = append(ops, takeOff(ce.counter, vals[ce.counter]))
		}
		ops = append(ops, s.counterRead(u))
		r, err := s.txn("mark", k, u, []clientv3.Cmp{
			clientv3.Compare(clientv3.CreateRevision(ks.claim), "=", ci.rev),
			clientv3.Compare(clientv3.ModRevision(ks.entry), "=", ce.rev),
			clientv3.Compare(clientv3.ModRevision(u), "<", snap.rev+1).WithPrefix(),
			clientv3.Compare(clientv3.ModRevision(counter), "=", snap.mods[counter]),
			clientv3.Compare(clientv3.ModRevision(ce.counter), "=", snap.mods[ce.counter]),
		}, ops, []clientv3.Op{clientv3.OpGet(ks.entry), clientv3.OpGet(ks.claim)})
		if leaseNotFound(err) { // the one lease it writes under: granted again
			s.leases.drop(ne.end)
			continue
		}
		if err != nil {
			return err // the entry may be rewritten, still running: Unclaim deletes it
		}
		if r.Succeeded {
			rev := r.Header.Revision
			pl.learn(s, r.Responses[len(r.Responses)-1], rev)
			s.mu.Lock()
			defer s.mu.Unlock()
			s.charge(ce.e.end, -ce.cost, -1)
			s.charge(ne.end, cost, 1)
			if c, ok := s.claims[k]; ok && c.rev == ci.rev {
				c.ran = true
				c.entry = &claimEntry{e: ne, rev: rev, cost: cost, counter: counter, n: vals[counter], nrev: rev}
				s.claims[k] = c
			}
			s.running[k] = entryRef{rev: rev, e: ne, charged: true, counter: vals[counter], counterRev: rev, limit: reserve}
			return nil
		}
		e, c := one(r.Responses[0]), one(r.Responses[1])
		if e == nil || e.ModRevision != ce.rev || c == nil || c.CreateRevision != ci.rev {
			return claimLostBeforeRun()
		}
		contended(attempt)
	}
	return contendedErr()
}

// callerFull is the refusal of an entry over the principal's share.
func callerFull() error {
	return amp.Named(amp.CodeRateLimited, ledger.ErrCallerFull, "this caller's share of the agent's idempotency ledger is used up (callers the policy does not name share one); retry later")
}

// claimLostBeforeRun is the refusal of a Running whose claim is gone.
func claimLostBeforeRun() error {
	return amp.Named(amp.CodeUnavailable, ErrClaimLost, "this agent's claim on the message expired before its handler could start; retry")
}

// contendedErr is the refusal after maxRetries counter conflicts.
func contendedErr() error {
	return amp.Named(amp.CodeUnavailable, ErrContended, "the idempotency ledger is contended for this caller; retry")
}

// charge adds to this process's tally. A charge keeps the bucket in the
// tally, on the clock that is never stepped, for as long as its lease
// granted now would last, or its cached lease lasts if longer
// (pruneTally). Callers hold s.mu.
func (s *Store) charge(end, bytes int64, entries int) {
	b := s.tally[end]
	if bytes > 0 {
		// As long as a lease granted now would last, or the bucket's
		// cached lease, under which the charged entry was most likely
		// written, if that lasts longer (granted before a step of the
		// wall clock forward).
		ttl := time.Duration(leaseTTL(end, s.o.Now(), s.o.MaxClockSkew)) * time.Second
		until := time.Now().Add(ttl)
		if cached := s.leases.ends(end); cached.After(until) {
			until = cached
		}
		if until.After(b.until) {
			b.until = until
		}
	}
	// Never below zero: a refund gives back at most what was charged here.
	nb, ne := max(b.bytes+bytes, 0), max(b.entries+entries, 0)
	s.usage.Bytes = max(s.usage.Bytes+nb-b.bytes, 0)
	s.usage.Entries = max(s.usage.Entries+ne-b.entries, 0)
	b.bytes, b.entries = nb, ne
	s.tally[end] = b
}

// remakeCounters reads, for a remake, the two counters it writes: counter,
// the remade entry's, and gone, the vanished entry's (often the same).
// Each is in snap's mods (0: absent), compared on in the remake's
// transaction; one that does not decode is left out of vals and creates,
// so nothing is taken off it, and charged reports whether counter
// decodes (else the remade entry's cost is not added to it). Only an
// etcd call that did not answer is an error.
func (s *Store) remakeCounters(counter, gone string) (snap *usageSnap, charged bool, err error) {
	snap = &usageSnap{vals: map[string]int64{}, mods: map[string]int64{}, creates: map[string]int64{}}
	charged = true
	for _, key := range []string{counter, gone} {
		if _, read := snap.mods[key]; read {
			continue
		}
		n, rev, created, err := s.readCounterOf("mark", key)
		if amp.NameOf(err) == ErrCounterCorrupt {
			snap.mods[key] = rev
			charged = charged && key != counter
			continue
		}
		if err != nil {
			return nil, false, err
		}
		snap.vals[key], snap.mods[key], snap.creates[key] = n, rev, created
	}
	return snap, charged, nil
}

// counterRead is the read of the usage counters under u, a principal's
// prefix: at most maxCounters of them (more is ErrCounterCorrupt,
// snapOf: FLEET-29), so that no answer of etcd carries more.
func (s *Store) counterRead(u string) clientv3.Op {
	return clientv3.OpGet(u, clientv3.WithPrefix(), clientv3.WithLimit(int64(s.maxCounters)))
}

// readUsage reads the counters under prefix (observed as op).
func (s *Store) readUsage(op, prefix string) (snap *usageSnap, err error) {
	err = s.call(op, func(ctx context.Context) error {
		read := s.counterRead(prefix)
		r, err := s.cli.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithLimit(read.Limit()))
		if err == nil {
			err = getFits(r, read) // FLEET-28
		}
		if err != nil {
			return err
		}
		var strays []cleanup
		snap, strays, err = snapOf((*pb.RangeResponse)(r), r.Header.Revision, s.overEnd())
		s.cleaner.strays(strays, true) // FLEET-33, FLEET-37
		return err
	})
	return snap, err
}

// counterGrace is how long past the latest moment any node's lease of a
// bucket may end by the fleet's rules (overEnd) its counters are still
// summed: etcd raises a TTL below its minimum (1.5 election timeouts, at
// most 75 s) and revokes an expired lease some time after it ends
// (FLEET-37).
const counterGrace = 2 * time.Minute

// overEnd is the latest bucket end whose counters no node's lease keeps
// by the fleet's rules at this node's clock now: a node grants a bucket's
// lease until its end plus ⌈MaxClockSkew⌉ + 1 s by its own clock
// (leaseTTL), at most MaxClockSkew behind this one's, and counterGrace
// more. Such a counter (under a lease some writer granted longer, or one
// etcd renewed in full at a change of leader) counts no entry any node
// still answers: it is not summed, and is deleted (FLEET-37).
func (s *Store) overEnd() int64 {
	skew := int64((s.o.MaxClockSkew + time.Second - 1) / time.Second)
	return s.o.Now().Unix() - 2*skew - 1 - int64(counterGrace/time.Second)
}

// snapOf is the package's snapOf of a principal's counters read at
// revision rev with a transaction, those of buckets over by this node's
// clock (overEnd) not summed; unless etcd cut the read at its limit
// (FLEET-29), the delete of each such counter is queued on the cleaner
// (FLEET-37). A counter without a lease is deleted only after the read
// that refuses a share on it (readUsage): the refusal is what names it
// to the operator (FLEET-33).
func (s *Store) snapOf(r *pb.RangeResponse, rev int64) (*usageSnap, error) {
	snap, strays, err := snapOf(r, rev, s.overEnd())
	s.cleaner.strays(strays, false)
	return snap, err
}

// counterEnd is the bucket end a usage counter's key names (ok false: a
// key that names none, summed as any counter).
func counterEnd(key []byte) (end int64, ok bool) {
	i := bytes.LastIndexByte(key, '/')
	end, err := strconv.ParseInt(string(key[i+1:]), 10, 64)
	return end, err == nil
}

// snapOf sums the usage counters of a range read at revision rev. A
// read that left counters out (its limit, counterRead) is
// ErrCounterCorrupt: a principal with more than any fleet writes
// (FLEET-29); so is a counter without a lease: every node writes a
// counter under its bucket's lease, and a refund keeps the lease it has,
// so none is one any node charged (FLEET-33). A counter of a bucket
// ending at or before over is decoded (one that does not is refused as
// any) but not summed, nor in vals: its bucket is over by every node's
// clock (FLEET-37); its mod and create revisions are kept, so that a
// comparison on it is exact. It also returns, unless the read was cut,
// the deletes to queue (cleaner.strays): each counter of a bucket over
// under a lease and each without one, all of the read, also past a
// counter refused. Each counter is looked at once: its key made a
// string once and its bucket end parsed once, for the sum and the
// deletes alike, the maps sized for the read at once: a principal's
// read holds up to maxCountersOf counters, and every node reads it at
// each of that principal's transactions (docs/SPEC-DECISIONS.md
// FLEET-41).
func snapOf(r *pb.RangeResponse, rev, over int64) (*usageSnap, []cleanup, error) {
	if r == nil {
		return nil, nil, amp.Named(amp.CodeUnavailable, ErrBadValue, "no usage counters in the answer")
	}
	if r.More {
		return nil, nil, amp.Named(amp.CodeUnavailable, ErrCounterCorrupt, "ledger usage counters on etcd: more for one principal than any fleet writes")
	}
	n := len(r.Kvs)
	snap := &usageSnap{rev: rev, vals: make(map[string]int64, n), mods: make(map[string]int64, n), creates: make(map[string]int64, n)}
	var strays []cleanup
	var err error
	for _, kv := range r.Kvs {
		key := string(kv.Key)
		end, ok := counterEnd(kv.Key)
		done := ok && end <= over
		if kv.Lease == 0 || done {
			strays = append(strays, cleanup{counter: key, rev: kv.ModRevision, stray: true, lease: kv.Lease})
		}
		if err == nil {
			err = snap.add(kv, key, done)
		}
	}
	if err != nil {
		return nil, strays, err
	}
	return snap, strays, nil
}

// add adds the counter kv, whose key is key, to snap: refused without a
// lease or when it does not decode; its revisions kept; summed and in
// vals unless its bucket is over (done).
func (snap *usageSnap) add(kv *mvccpb.KeyValue, key string, done bool) error {
	if kv.Lease == 0 {
		return amp.Named(amp.CodeUnavailable, ErrCounterCorrupt, "ledger usage counter on etcd without a lease: no node writes one")
	}
	n, err := decodeCounter(kv.Value)
	if err != nil {
		return err
	}
	snap.mods[key] = kv.ModRevision
	snap.creates[key] = kv.CreateRevision
	if done {
		return nil
	}
	if snap.sum, err = addCounter(snap.sum, n); err != nil {
		return err
	}
	snap.vals[key] = n
	return nil
}

// contended waits a little before the next try of a transaction whose
// counters changed: 1 ms more for each try.
func contended(attempt int) { time.Sleep(time.Duration(attempt+1) * time.Millisecond) }

// Finish implements ledger.Store: one transaction records the reply in
// the running entry (its lease kept) while the entry is the one this
// process marked or found running and its claim holds, gives back to the
// usage counter what of the reservation the reply does not use, and
// deletes the claim. A counter that keeps changing (after 16 tries), or
// that cannot be read (corrupt, or etcd slow), is left charged rather than
// the reply unrecorded (FLEET-14). When the principal's lock does not
// come within the call's deadline, the reply is recorded without it and
// the refund queued on the cleaner (FLEET-20); an entry that went with
// its lease while the claim holds is made again first (remake): a handler
// that ran is never refused for the queue, its principal's share or a
// counter that does not decode; only for etcd not answering (retryable),
// the node's budget, or the claim lost.
func (s *Store) Finish(k ledger.Key, reply []byte) error {
	f, err := s.finishing(k, reply)
	if err != nil {
		return err
	}
	if pl, err := s.hot.lock(f.u, s.lockBy()); err != nil {
		// The principal's queue did not reach this Finish within its
		// deadline (FLEET-15): the handler ran, so its reply is recorded
		// all the same, without the lock (FLEET-20), and the unused
		// reservation is given back afterwards by the cleaner, also
		// without the lock (refundLater). The transaction touches no
		// counter: it is combined as a key of its own.
		f.unread, f.ck = true, f.ks.entry
	} else {
		f.pl = pl
		defer s.hot.unlock(pl)
	}
	for attempt := 0; ; attempt++ {
		cmp, ops, refunds := s.finishTxn(f, attempt)
		r, err := s.txn("finish", k, f.ck, cmp, ops,
			[]clientv3.Op{clientv3.OpGet(f.ks.entry), clientv3.OpGet(f.ks.claim)})
		if err != nil {
			return err
		}
		if r.Succeeded {
			s.finished(f, r, refunds)
			return nil
		}
		remade, err := s.finishFailed(f, r, refunds)
		if err != nil {
			return err
		}
		if remade {
			attempt = -1 // the next is the first try on the new entry
			continue
		}
		contended(attempt)
	}
}

// finishCall is one Finish call: the reply of k to record under the
// claim ci (claimed: one of this process), with the etcd keys ks, the
// principal's usage prefix u and lock pl (nil: recorded without it,
// FLEET-20), in the running entry ref (as marked or found, or as made
// again: remade), and what follows from it (setEntry).
type finishCall struct {
	k       ledger.Key
	reply   []byte
	ks      keys
	ci      claimInfo
	claimed bool
	u       string
	ck      string // what the transaction is combined by (FLEET-16)
	pl      *principalLock
	keep    int64 // what the done entry still costs
	ref     entryRef
	done    entry  // ref's entry, done with reply
	refund  int64  // what of ref's reservation reply does not use
	counter string // the usage counter ref was charged to
	unread  bool   // the counter could not be read: no refund (FLEET-14)
	remade  bool   // the entry went and was made again (remake)
}

// finishing is the Finish of k with reply, in the entry this process
// marked or found running: ErrTicketUsed when there is none, and
// ErrReplyTooLarge when reply is over what it reserved.
func (s *Store) finishing(k ledger.Key, reply []byte) (*finishCall, error) {
	s.mu.Lock()
	ref, ok := s.running[k]
	ci, claimed := s.claims[k]
	s.mu.Unlock()
	if !ok {
		return nil, amp.Named(amp.CodeInternalError, ledger.ErrTicketUsed, "ledger entry is not running here")
	}
	if int64(len(reply)) > ref.limit {
		return nil, amp.Named(amp.CodeOverloaded, ledger.ErrReplyTooLarge,
			"the reply is larger than the idempotency ledger reserved for it (%d bytes)", ref.limit)
	}
	u := usagePrefix(s.prefix, hexOf(ref.e.principal))
	f := &finishCall{k: k, reply: reply, ks: keysOf(s.prefix, k), ci: ci, claimed: claimed,
		u: u, ck: u, keep: entryCost(k, int64(len(reply)))}
	f.setEntry(ref)
	return f, nil
}

// setEntry makes ref the entry f records its reply in.
func (f *finishCall) setEntry(ref entryRef) {
	f.ref = ref
	f.done = ref.e
	f.done.state, f.done.reply = stateDone, f.reply
	f.refund = ref.e.reserve - int64(len(f.reply))
	f.counter = f.u + itoa(ref.e.end)
}

// finishTxn is the transaction of f's try attempt: the reply recorded in
// the entry (its lease kept) while the entry is unchanged and the claim
// holds, the claim deleted, the refund taken off the counter when it can
// be (finishRefund: refunds), and the principal's counters read after it
// when f holds the lock.
func (s *Store) finishTxn(f *finishCall, attempt int) (cmp []clientv3.Cmp, ops []clientv3.Op, refunds bool) {
	cmp = []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(f.ks.entry), "=", f.ref.rev)}
	if f.claimed {
		cmp = append(cmp, clientv3.Compare(clientv3.CreateRevision(f.ks.claim), "=", f.ci.rev))
	}
	ops = []clientv3.Op{clientv3.OpPut(f.ks.entry, string(f.done.encode()), clientv3.WithIgnoreLease()), clientv3.OpDelete(f.ks.claim)}
	if rcmp, rop, ok := s.finishRefund(f, attempt); ok {
		cmp, ops = append(cmp, rcmp...), append(ops, rop)
		refunds = true
	}
	if f.pl != nil { // the counters after it, for the next holder's guess
		ops = append(ops, s.counterRead(f.u))
	}
	return cmp, ops, refunds
}

// finishRefund is the refund of f's try attempt (ok): comparisons on the
// counter the entry was charged to and the operation that takes the
// refund off it. None after maxRetries tries, without a refund, once
// the counter could not be read, or for an entry whose cost is on no
// counter (uncounted: remade so, here or, as its value says, by another
// process: FLEET-22); the counter as marked here, or as this
// process last wrote it, is the first guess, read again on a later try
// or when the guess is missing or too small.
func (s *Store) finishRefund(f *finishCall, attempt int) (cmp []clientv3.Cmp, op clientv3.Op, ok bool) {
	if attempt >= maxRetries || f.refund <= 0 || f.unread || f.ref.uncounted {
		return nil, op, false
	}
	// As marked here, or as this process last wrote it: the first guess.
	cur, rev := f.pl.guess(f.counter, f.ref.counter, f.ref.counterRev)
	if attempt > 0 || rev == 0 || cur < f.refund+f.keep {
		var created int64
		var err error
		cur, rev, created, err = s.readCounterOf("finish", f.counter)
		// Corrupt, or etcd slow: the reply of a handler that ran
		// is recorded all the same, the charge left until the
		// bucket expires. Absent, made again since the entry was
		// charged (its lease ended), or holding less than the
		// charge: none of the refund is on it (refund).
		if err != nil || created > f.ref.rev || cur < f.refund+f.keep {
			f.unread, rev = true, 0
		}
	}
	if rev == 0 {
		return nil, op, false
	}
	// Compared on the counter the entry was charged to.
	return chargedTo(f.counter, rev, f.ref.rev), takeOff(f.counter, cur-f.refund), true
}

// finished records in this process that f's transaction r succeeded:
// the entry and the claim forgotten, the refund given back to the tally
// when r took it off the counter (refunds) and this process charged the
// entry, or queued on the cleaner when f did not hold the lock.
func (s *Store) finished(f *finishCall, r *clientv3.TxnResponse, refunds bool) {
	if f.pl != nil {
		f.pl.learn(s, r.Responses[len(r.Responses)-1], r.Header.Revision)
	}
	s.mu.Lock()
	delete(s.running, f.k)
	delete(s.claims, f.k)
	if refunds && f.ref.charged { // only what this process charged
		s.charge(f.ref.e.end, -f.refund, 0)
	}
	s.mu.Unlock()
	if f.pl == nil && f.refund > 0 && !f.ref.uncounted { // recorded without the lock
		s.refundLater(f.k, f.ref, f.counter, f.refund, f.keep)
	}
}

// finishFailed is what follows a try of f that failed (r): an entry gone
// while the claim holds is made again, once (remade: the next try is the
// first on it); gone otherwise, ErrTicketUsed; an entry or a claim that
// changed, ErrClaimLost; nil to try again, only after a try that took a
// refund (refunds), which failed on the counter. Tries past maxRetries
// take none (finishRefund), so Finish ends by then: the reply recorded
// without the refund rather than refused (FLEET-14), never ErrContended.
func (s *Store) finishFailed(f *finishCall, r *clientv3.TxnResponse, refunds bool) (remade bool, err error) {
	e, c := one(r.Responses[0]), one(r.Responses[1])
	if e == nil && !f.remade && f.claimed && c != nil && c.CreateRevision == f.ci.rev {
		// The entry went with its bucket lease while the handler ran,
		// and this claim still holds: made again here, at once, never
		// through Running's wait for the principal's lock, then
		// finished as marked.
		if err := s.remakeFinishing(f); err != nil {
			return false, err
		}
		return true, nil
	}
	if e == nil {
		s.finishVanished(f)
		return false, amp.Named(amp.CodeInternalError, ledger.ErrTicketUsed, "ledger entry went missing (expired)")
	}
	if !refunds || e.ModRevision != f.ref.rev || f.claimed && (c == nil || c.CreateRevision != f.ci.rev) {
		return false, amp.Named(amp.CodeUnavailable, ErrClaimLost, "this agent's claim on the message expired while its handler ran; a retry is answered \"outcome unknown\"")
	}
	return false, nil
}

// remakeFinishing makes f's entry again (remake) and makes it the entry
// f records its reply in; an entry made uncounted takes no refund. What
// a try learnt of the vanished entry's counter (unread: gone with its
// lease, or made again since) says nothing of the counter the remake just
// charged, which the next try guesses from the remake's own write
// (FLEET-25); without the lock it stays unread (FLEET-20's queued refund).
func (s *Store) remakeFinishing(f *finishCall) error {
	if err := s.remake(f.k, f.ref, f.ci, f.reply, f.pl); err != nil {
		return err
	}
	f.remade = true
	s.mu.Lock()
	ref := s.running[f.k]
	s.mu.Unlock()
	f.setEntry(ref)
	f.unread = f.pl == nil
	return nil
}

// finishVanished records in this process that f's entry is gone from
// etcd (with its lease) and is not made again here (made once already,
// or the claim gone): its charge leaves the tally when this process
// charged it, and the claim, if it holds, names no entry (Running makes
// it again under the claim).
func (s *Store) finishVanished(f *finishCall) {
	s.mu.Lock()
	delete(s.running, f.k)
	if f.ref.charged { // gone from etcd with its lease (remake)
		s.charge(f.ref.e.end, -entryCost(f.k, f.ref.e.reserve), -1)
	}
	if c, ok := s.claims[f.k]; ok && c.rev == f.ci.rev {
		c.entry = nil // Running makes it again, under the claim
		s.claims[f.k] = c
	}
	s.mu.Unlock()
}

// refundLater queues the refund of a Finish that recorded the reply of k
// (its entry ref) without the principal's lock (FLEET-20): the cleaner
// takes refund off counter, compared on its mod revision and without the
// lock, only if that counter is the one ref was charged to (made at or
// before ref.rev) and still holds refund+keep (keep: what the done entry
// costs), and gives the tally back what this process charged, once
// (clean). Refunds fill at most half of the cleaner's queue, the rest
// kept for given-up claims; one more is dropped (its charge then stays
// until the bucket ends, as FLEET-14's: over-charging briefly is safe).
func (s *Store) refundLater(k ledger.Key, ref entryRef, counter string, refund, keep int64) {
	c := cleanup{k: k, rev: ref.rev, counter: counter, take: refund, keep: keep, end: ref.e.end}
	if ref.charged {
		c.cost = refund
	}
	cl := &s.cleaner
	cl.mu.Lock()
	if len(cl.q) < maxCleanups/2 {
		cl.queue(c)
	}
	cl.mu.Unlock()
	cl.poke()
}

// remake makes again the running entry of k (ref), which went with its
// bucket lease (expired, revoked) while its handler ran under the claim
// ci, which still holds, so that Finish records reply in it: markNew's
// transaction (the same budget check; no share check, and only its two
// counters read: makeEntry with gone), with the smallest reservation
// that holds reply, and never a wait for the principal's lock, which pl
// is when the caller holds it: a Finish is never refused for its
// principal's queue (FLEET-20), its share or its counters (review 35).
// The entry is kept at least a minute, as Ticket.Finish
// (agent/ledger/ledger.go) keeps a reply it records again, so that a
// retry already in flight finds it. The vanished entry's charge leaves
// this process's tally (etcd deleted it with its lease), and the counter
// it was added to when that counter outlived it (on another node's lease,
// the last writer's): neither counts against the remake (review 29). Its
// cost is at most the vanished entry's (reply fits the reservation that
// entry was admitted with), so the share is over by at most that one
// charge per claim, until its bucket ends.
func (s *Store) remake(k ledger.Key, ref entryRef, ci claimInfo, reply []byte, pl *principalLock) error {
	now := s.o.Now()
	expires := ref.e.expires
	if least := now.Add(time.Minute); expires.Before(least) {
		expires = least
	}
	old := entryCost(k, ref.e.reserve)
	e, cost, err := s.newEntry(k, now, expires, s.reserveOf(max(int64(len(reply)), ledger.MinReplyReserve)), &ref)
	if err != nil {
		return err
	}
	e.principal = ref.e.principal // the counters Finish locked, whatever the policy says now
	gone := &vanished{counter: usageKey(s.prefix, hexOf(ref.e.principal), ref.e.end), cost: old, rev: ref.rev}
	if ref.uncounted {
		gone.cost = 0 // never added to a counter: nothing of it to take off (review 42)
	}
	if err := s.makeEntry(k, ci, true, e, cost, gone, pl); err != nil {
		return err
	}
	if ref.charged {
		s.mu.Lock()
		s.charge(ref.e.end, -old, -1)
		s.mu.Unlock()
	}
	return nil
}

// readCounter reads one usage counter (rev 0: absent), counted in the
// metrics under op.
func (s *Store) readCounter(op, key string) (n, rev int64, err error) {
	n, rev, _, err = s.readCounterOf(op, key)
	return n, rev, err
}

// readCounterOf is readCounter with the counter's create revision.
func (s *Store) readCounterOf(op, key string) (n, rev, created int64, err error) {
	err = s.call(op, func(ctx context.Context) error {
		r, err := s.cli.Get(ctx, key)
		if err == nil {
			err = getFits(r, clientv3.OpGet(key)) // FLEET-28
		}
		if err != nil || len(r.Kvs) == 0 {
			return err
		}
		rev, created = r.Kvs[0].ModRevision, r.Kvs[0].CreateRevision
		n, err = decodeCounter(r.Kvs[0].Value)
		return err
	})
	return n, rev, created, err
}

// claimHolds confirms in etcd (a linearizable read: no Raft commit, read
// with the other claims confirmed at the same time, FLEET-12) that ci is
// still k's claim.
func (s *Store) claimHolds(k ledger.Key, ci claimInfo) error {
	kv, err := s.getKey("mark", keysOf(s.prefix, k).claim)
	if err != nil {
		return err
	}
	if kv == nil || kv.CreateRevision != ci.rev {
		return claimLostBeforeRun()
	}
	return nil
}

// budgetFull reports whether an entry costing cost is over this process's
// share of the ledger's budget, counting what it holds at now, less what
// the tally of the bucket ending at end still holds of freed (the charge
// of an entry the new one replaces; 0 for none).
func (s *Store) budgetFull(now time.Time, cost, freed, end int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pruneTally(now)
	if freed > 0 {
		cost -= min(freed, s.tally[end].bytes)
	}
	return s.usage.Bytes+cost > s.lim.Budget
}

package etcdledger

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ampbundle/ampbundle/agent/ledger"
	"github.com/ampbundle/ampbundle/amp"
)

// maxCleanups bounds the cleanups waiting for etcd; one more is dropped
// (its claim then goes with the session lease, when the process ends).
const maxCleanups = 1 << 16

// maxParked bounds the clean-ups of lost Claims not found applied yet
// (parked, FLEET-31), kept apart from the queue: one more is dropped
// (its claim, if etcd applies it, then goes with the session lease or
// holds its message until it expires, as a dropped clean-up's does).
// At most one per lost claim the node remembers (cleaner.lost).
const maxParked = maxCleanups

// cleanup is a claim this process gave up, to delete from etcd: the claim
// key of k created at revision rev (never a later claim of k), or, with
// rev 0, the claim whose value is token (a Claim whose answer was lost:
// its revision is read first); with entry, also the running entry of k
// made with or after that claim (its handler never started: FLEET-7,
// FLEET-11). cost and end are what this process's budget tally holds for
// that entry (its cost in the bucket ending at end; 0: nothing), given
// back when the entry goes (docs/SPEC-DECISIONS.md FLEET-13).
//
// With counter, it is instead the refund of a Finish that recorded k's
// reply without the principal's lock (FLEET-20): take is taken off
// counter, and cost (what of it this process's tally holds) given back
// to the tally of the bucket ending at end, once. rev is then the
// revision at which the entry was charged to counter, and keep what the
// done entry still costs: the refund is taken only off the counter
// created by then (never one made again since, with the same key) and
// only while it holds take+keep (refund).
//
// With stray, it is instead the delete of counter, a usage counter
// without a lease (FLEET-33) or of a bucket over by every node's clock
// (FLEET-37), if it is still the one read at mod revision rev and still
// has the lease it was read with (lease; 0: none).
//
// until (unix seconds) is, with rev 0, when a claim of token can no
// longer matter (its message's expiry plus MaxClockSkew): etcd may apply
// a Claim whose answer was lost after the clean-up looked for it, so
// until then a clean-up that finds no such claim is parked and looks
// again (errClaimUnseen, FLEET-31), at most once per SessionTTL, apart
// from the queue (FLEET-35).
type cleanup struct {
	k          ledger.Key
	rev        int64
	token      string
	entry      bool
	cost, end  int64
	counter    string
	take, keep int64
	until      int64
	stray      bool
	lease      int64
}

// errClaimUnseen is a clean-up of a claim named by its value (rev 0)
// that found no such claim before its until: etcd may still apply the
// Claim (its answer was lost, not refused), so it is looked for again
// (FLEET-31). Never returned to a caller of the Store.
var errClaimUnseen = errors.New("etcdledger: the lost claim is not in etcd yet")

// cleaner retries the cleanups that failed, for as long as the process
// lives: one goroutine, one queue, all of it tried again after a backoff
// (OpTimeout, doubling, at most SessionTTL) when etcd fails, at once
// when a cleanup is added. The clean-ups of lost Claims not found
// applied yet are parked apart (parked): they never wake it, and a
// round looks at them only once look has passed, at most once per
// SessionTTL (FLEET-35).
type cleaner struct {
	s    *Store
	mu   sync.Mutex
	q    map[cleanup]struct{}
	wake chan struct{}
	once sync.Once
	// parked holds the clean-ups of lost Claims not found applied yet
	// (errClaimUnseen: FLEET-31), at most maxParked; look is when a
	// round looks for them all again (monotonic time, SessionTTL after
	// the last look or the first park).
	parked map[cleanup]struct{}
	look   time.Time
	// lost holds the values of this process's claims whose Claim answer
	// was lost, with their message's expiry (unix seconds): a claim that
	// etcd applied after its cleanup looked for it is still known to have
	// run nothing when a copy finds it (at most maxCleanups; Sweep forgets
	// the expired ones).
	lost map[string]int64
	// busy counts, per key, the clean-ups of it that run now (taken off
	// q by the round or by claimHeld) and the Unclaims of it in flight:
	// one runs at a time, so that no two give one charge back to the
	// tally, and a copy of the message waits instead of deleting the
	// claim under them (FLEET-21). running is their sum.
	busy    map[ledger.Key]int
	running int
}

// lostClaim queues the undoing of the Claim of k whose answer was lost
// (its value token), and remembers token until expires.
func (cl *cleaner) lostClaim(k ledger.Key, token string, expires time.Time) {
	cl.mu.Lock()
	if cl.lost == nil {
		cl.lost = map[string]int64{}
	}
	if len(cl.lost) < maxCleanups {
		cl.lost[token] = expires.Unix()
	}
	cl.mu.Unlock()
	cl.add(cleanup{k: k, token: token, entry: true, until: expires.Add(cl.s.o.MaxClockSkew).Unix()})
}

// wasLost reports whether token is the value of a Claim whose answer was
// lost (its handler never started).
func (cl *cleaner) wasLost(token string) bool {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	_, ok := cl.lost[token]
	return ok
}

// forget drops the lost claims whose message expired before now.
func (cl *cleaner) forget(now time.Time) {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	for t, exp := range cl.lost {
		if exp < now.Unix() {
			delete(cl.lost, t)
		}
	}
}

// add queues c, starting the goroutine on first use.
func (cl *cleaner) add(c cleanup) {
	cl.mu.Lock()
	cl.queue(c)
	cl.mu.Unlock()
	cl.poke()
}

// queue puts c on the queue, unless it is full. Callers hold cl.mu.
func (cl *cleaner) queue(c cleanup) {
	if len(cl.q) < maxCleanups {
		cl.q[c] = struct{}{}
	}
}

// poke wakes the goroutine (started on first use) for a round.
func (cl *cleaner) poke() {
	cl.once.Do(func() { go cl.run() })
	select {
	case cl.wake <- struct{}{}:
	default:
	}
}

// take removes and returns the queued cleanups of k, each to be run and
// then ended (end), or, when none is queued, marks one run of k that the
// caller makes and ends; busy reports, taking none, that a clean-up or an
// Unclaim of k runs already.
func (cl *cleaner) take(k ledger.Key) (out []cleanup, busy bool) {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if cl.busy[k] > 0 {
		return nil, true
	}
	for c := range cl.q {
		if c.k == k && c.counter == "" { // a refund is no undo of a claim
			out = append(out, c)
			delete(cl.q, c)
		}
	}
	for c := range cl.parked {
		if c.k == k {
			out = append(out, c)
			delete(cl.parked, c)
		}
	}
	cl.hold(k, max(len(out), 1))
	return out, false
}

// begin takes the queued (or parked) cleanup c to run it, unless it is
// no longer queued (taken and run by a copy's claimHeld) or a clean-up or
// Unclaim of its key runs: then later reports that it waits for a later
// round.
func (cl *cleaner) begin(c cleanup) (run, later bool) {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	_, queued := cl.q[c]
	_, parked := cl.parked[c]
	if !queued && !parked {
		return false, false
	}
	if cl.busy[c.k] > 0 {
		return false, true
	}
	delete(cl.q, c)
	delete(cl.parked, c)
	cl.hold(c.k, 1)
	return true, false
}

// end ends a run of c taken by take or begin: queued again unless done,
// in the same critical section that drops the run's mark, so that a copy's
// take finds k busy or c queued, never neither (FLEET-21). The cleaner is
// woken when a clean-up waits: c, or one a round skipped while k was busy.
func (cl *cleaner) end(c cleanup, done bool) {
	cl.mu.Lock()
	cl.hold(c.k, -1)
	if !done {
		cl.queue(c)
	}
	waits := len(cl.q) > 0
	cl.mu.Unlock()
	if waits {
		cl.poke()
	}
}

// park puts back a clean-up that found its lost claim not yet applied
// (errClaimUnseen), ending its run, without waking the cleaner: it is
// looked for again when the parked ones are, at most SessionTTL later
// (run), never in a loop of rounds (FLEET-31), and never by the rounds
// that other clean-ups wake (FLEET-35).
func (cl *cleaner) park(c cleanup) {
	cl.mu.Lock()
	cl.hold(c.k, -1)
	cl.shelve(c)
	cl.mu.Unlock()
}

// repark moves c, a clean-up a round found not applied yet (lookLost),
// from the queue to the parked ones, unless a copy's claimHeld took it.
func (cl *cleaner) repark(c cleanup) {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if _, ok := cl.q[c]; ok {
		delete(cl.q, c)
		cl.shelve(c)
	}
}

// shelve parks c, unless maxParked are: the first one parked is looked
// for again SessionTTL later. Callers hold cl.mu.
func (cl *cleaner) shelve(c cleanup) {
	if cl.parked == nil {
		cl.parked = map[cleanup]struct{}{}
	}
	if len(cl.parked) == 0 {
		cl.look = time.Now().Add(cl.s.o.SessionTTL)
	}
	if len(cl.parked) < maxParked {
		cl.parked[c] = struct{}{}
	}
}

// strays queues the deletes snapOf found in a principal's counters as
// read (FLEET-41): of each of a bucket ending at or before the read's
// overEnd (FLEET-37): a lease longer than any node grants keeps it, and
// it counts no entry a node still answers; and, with leaseless, of each
// that has no lease (FLEET-33): no node writes one, so it holds no
// charge of an entry and only refuses the principal while it lives.
// Deletes and refunds together fill at most half of the queue, the rest
// kept for given-up claims; one more waits for the next read to find
// it.
func (cl *cleaner) strays(qs []cleanup, leaseless bool) {
	wanted := func(c cleanup) bool { return leaseless || c.lease != 0 }
	if !slices.ContainsFunc(qs, wanted) {
		return
	}
	cl.mu.Lock()
	for _, c := range qs {
		if wanted(c) && len(cl.q) < maxCleanups/2 {
			cl.queue(c)
		}
	}
	cl.mu.Unlock()
	cl.poke()
}

// also marks one more run of k, taken by the caller of take beside the
// clean-ups take returned.
func (cl *cleaner) also(k ledger.Key) {
	cl.mu.Lock()
	cl.hold(k, 1)
	cl.mu.Unlock()
}

// idle is how long the goroutine waits, with no failure, for a round
// nothing wakes: SessionTTL while a clean-up is queued (one a round
// skipped), until the parked ones' look while only they wait; ok false
// when nothing waits.
func (cl *cleaner) idle() (d time.Duration, ok bool) {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if len(cl.q) > 0 {
		return cl.s.o.SessionTTL, true
	}
	if len(cl.parked) > 0 {
		return max(time.Until(cl.look), 0), true
	}
	return 0, false
}

// unclaiming marks an Unclaim of k in flight (n 1) or ended (n -1); an
// end wakes the cleaner when a clean-up waits (one a round skipped while
// k was busy).
func (cl *cleaner) unclaiming(k ledger.Key, n int) {
	cl.mu.Lock()
	cl.hold(k, n)
	waits := n < 0 && len(cl.q) > 0
	cl.mu.Unlock()
	if waits {
		cl.poke()
	}
}

// hold adds n to k's runs. Callers hold cl.mu.
func (cl *cleaner) hold(k ledger.Key, n int) {
	if n == 0 {
		return
	}
	if cl.busy == nil {
		cl.busy = map[ledger.Key]int{}
	}
	if cl.busy[k] += n; cl.busy[k] <= 0 {
		delete(cl.busy, k)
	}
	cl.running += n
}

// pending is the number of cleanups waiting or running, parked ones
// aside.
func (cl *cleaner) pending() int {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	return len(cl.q) + cl.running
}

// parkedN is the number of parked clean-ups.
func (cl *cleaner) parkedN() int {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	return len(cl.parked)
}

// run retries the queue until the store closes. While clean-ups wait
// with none failing, it looks again every SessionTTL; while only parked
// ones wait (lost claims not yet applied, FLEET-31), at their look.
func (cl *cleaner) run() {
	fails := 0
	for {
		var wait <-chan time.Time
		if fails > 0 {
			d := cl.s.o.OpTimeout << min(fails-1, 16)
			wait = time.After(min(d, cl.s.o.SessionTTL))
		} else if d, ok := cl.idle(); ok {
			wait = time.After(d)
		}
		select {
		case <-cl.s.bg.Done():
			return
		case <-wait:
		case <-cl.wake:
			if fails > 0 { // etcd failed lately: keep to the backoff
				select {
				case <-cl.s.bg.Done():
					return
				case <-wait:
				}
			}
		}
		if cl.round() {
			fails = 0
		} else {
			fails++
		}
	}
}

// round tries the queued cleanups, one by one, until etcd does not answer
// one in time (it is likely down: the rest wait for the next round); a
// cleanup that fails for a reason of its own (its entry changed under the
// claim) stays queued and the round goes on (FLEET-18). One whose key is
// busy (a clean-up or an Unclaim of it runs) is skipped, not failed: the
// end of that run wakes the cleaner for it, with no backoff (FLEET-21).
// A lost claim not yet applied is parked, not failed (FLEET-31): the
// claim keys of the lost claims are read together first (lookLost), and
// one not found applied is parked without a read of its own, or is
// dropped past its until (FLEET-34). The parked ones join a round only
// once their look has passed, then SessionTTL later again, whatever
// woke it (FLEET-35). It reports whether none failed.
func (cl *cleaner) round() bool {
	cl.mu.Lock()
	batch := make([]cleanup, 0, len(cl.q))
	for c := range cl.q {
		batch = append(batch, c)
	}
	if now := time.Now(); len(cl.parked) > 0 && !now.Before(cl.look) {
		for c := range cl.parked {
			batch = append(batch, c)
		}
		cl.look = now.Add(cl.s.o.SessionTTL)
	}
	cl.mu.Unlock()
	seen, err := cl.s.lookLost(batch)
	if err != nil {
		return false
	}
	ok := true
	for _, c := range batch {
		if cl.s.bg.Err() != nil {
			return false
		}
		if kv, looked := seen[c]; looked && (kv == nil || string(kv.Value) != c.token) {
			if c.until < cl.s.o.Now().Unix() {
				if run, _ := cl.begin(c); run {
					cl.end(c, true) // it can no longer matter
				}
			}
			cl.repark(c) // not applied yet: looked for again at the next look
			continue
		}
		if run, _ := cl.begin(c); !run {
			continue
		}
		err := cl.s.clean(c)
		if err == errClaimUnseen {
			cl.park(c)
			continue
		}
		cl.end(c, err == nil)
		if err != nil {
			if amp.NameOf(err) == ledger.ErrLedgerIO {
				return false
			}
			ok = false
		}
	}
	return ok
}

// lookLost reads the claim keys of the lost claims among batch (the
// clean-ups of a claim named by its value, rev 0), combineMaxOps to one
// read-only transaction, as the shared read of claims does (FLEET-12):
// one request for 128 lost claims, where each clean-up read its own key
// at every round while it waited (FLEET-31). The answer maps each one
// read to its claim key's key-value (nil: absent). A read that etcd
// refuses for its size (a member's --max-txn-ops below 128), or answers
// in another shape (FLEET-28), leaves its clean-ups out, each read alone
// by clean, as before; etcd not answering fails the round (FLEET-34).
func (s *Store) lookLost(batch []cleanup) (map[cleanup]*mvccpb.KeyValue, error) {
	seen := map[cleanup]*mvccpb.KeyValue{}
	var lost []cleanup
	for _, c := range batch {
		if c.rev == 0 && c.counter == "" && !c.stray {
			lost = append(lost, c)
		}
	}
	for len(lost) > 0 {
		part := lost[:min(len(lost), combineMaxOps)]
		lost = lost[len(part):]
		ops := make([]clientv3.Op, len(part))
		for i, c := range part {
			ops[i] = clientv3.OpGet(keysOf(s.prefix, c.k).claim)
		}
		var r *clientv3.TxnResponse
		err := s.call("unclaim", func(ctx context.Context) (err error) {
			r, err = s.cli.Txn(ctx).Then(ops...).Commit()
			if err == nil {
				err = replyFits(r, ops, nil) // FLEET-28
			}
			return err
		})
		if refusedUnwritten(err) || err != nil && amp.NameOf(err) != ledger.ErrLedgerIO {
			continue // read alone by clean, each failing or not on its own
		}
		if err != nil {
			return nil, err // etcd did not answer: the round waits for its backoff
		}
		for i, c := range part {
			seen[c] = one(r.Responses[i])
		}
	}
	return seen, nil
}

// clean deletes c's claim, if it is still the one created at c.rev (or,
// with c.rev 0, the one whose value is c.token), in one transaction; with
// c.entry, also k's entry if it was made with that claim or after it and
// is still running (runningValue: counted or not), unchanged since it
// was read, with its usage charge (none for an uncounted one, FLEET-22)
// given back in a nested transaction compared on
// the counter's mod revision (a counter written since keeps the charge,
// which then expires with its bucket: never a refund counted twice). An
// entry that changed under a claim still held is an error, so that the
// clean-up is tried again.
func (s *Store) clean(c cleanup) error {
	if c.stray {
		return s.cleanStray(c)
	}
	if c.counter != "" {
		return s.cleanRefund(c)
	}
	ks := keysOf(s.prefix, c.k)
	if c.rev == 0 {
		var kv *mvccpb.KeyValue
		err := s.call("unclaim", func(ctx context.Context) error {
			r, err := s.cli.Get(ctx, ks.claim)
			if err == nil {
				err = getFits(r, clientv3.OpGet(ks.claim)) // FLEET-28
			}
			if err == nil && len(r.Kvs) == 1 {
				kv = r.Kvs[0]
			}
			return err
		})
		if err != nil {
			return err
		}
		if kv == nil || string(kv.Value) != c.token {
			// Never made, gone with its session, or not applied yet: a
			// Claim whose answer was lost may be applied after this
			// look, and left, it would hold the message Busy on every
			// other node, and read as Lost once this node stops
			// (FLEET-31). Looked for again until it cannot matter.
			if c.until >= s.o.Now().Unix() {
				return errClaimUnseen
			}
			return nil
		}
		c.rev = kv.CreateRevision
	}
	ops := []clientv3.Op{clientv3.OpDelete(ks.claim)}
	var ent *mvccpb.KeyValue
	var counter string // the usage counter the nested refund takes cost off
	var cost, charged int64
	gone := false
	if c.entry {
		err := s.call("unclaim", func(ctx context.Context) error {
			r, err := s.cli.Get(ctx, ks.entry)
			if err == nil {
				err = getFits(r, clientv3.OpGet(ks.entry))
			}
			if err == nil && len(r.Kvs) == 1 {
				ent = r.Kvs[0]
			}
			return err
		})
		if err != nil {
			return err
		}
		gone = ent == nil // deleted by a try whose answer was lost, or expired
		if ent != nil && (ent.CreateRevision < c.rev || !runningValue(ent.Value)) {
			ent = nil // not made with this claim, or not running: kept
		}
	}
	cmp := []clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(ks.claim), "=", c.rev)}
	if ent != nil { // that entry, unchanged, goes with the claim, and its charge
		cmp = append(cmp, clientv3.Compare(clientv3.ModRevision(ks.entry), "=", ent.ModRevision))
		ops = append(ops, clientv3.OpDelete(ks.entry))
		// An uncounted entry (state 3) has no charge on a counter to give
		// back (FLEET-22).
		if e, err := decodeEntry(ent.Value); err == nil && !e.uncounted {
			key := usageKey(s.prefix, hexOf(e.principal), e.end)
			n, crev, err := s.readCounter("unclaim", key)
			if err != nil && amp.NameOf(err) != ErrCounterCorrupt {
				return err
			}
			// A corrupt counter loses only the refund (its charge stays
			// until its bucket ends): the claim and the unrun entry go
			// all the same (FLEET-18).
			if err == nil && crev > 0 { // compared on its mod revision; refund retries a later write
				counter, cost, charged = key, entryCost(c.k, e.reserve), ent.ModRevision
				ops = append(ops, clientv3.OpTxn(chargedTo(counter, crev, charged),
					[]clientv3.Op{takeOff(counter, n-cost)}, nil))
			}
		}
	}
	var r *clientv3.TxnResponse
	els := []clientv3.Op{clientv3.OpGet(ks.claim)}
	err := s.call("unclaim", func(ctx context.Context) (err error) {
		r, err = s.cli.Txn(ctx).If(cmp...).Then(ops...).Else(els...).Commit()
		if err == nil {
			err = replyFits(r, ops, els) // FLEET-28
		}
		return err
	})
	if err != nil || ent == nil {
		if err == nil && gone {
			s.untally(c)
		}
		return err
	}
	if !r.Succeeded {
		if kv := one(r.Responses[0]); kv != nil && kv.CreateRevision == c.rev {
			return amp.Named(amp.CodeUnavailable, ErrClaimLost, "the entry changed under the claim: look again")
		}
		return nil // the claim is gone: nothing of it to undo
	}
	s.untally(c)
	if counter != "" {
		// The nested refund (the last op) found the counter written since
		// it was read: take the cost off as Unclaim does.
		if in := r.Responses[len(r.Responses)-1].GetResponseTxn(); in == nil || !in.Succeeded {
			s.refund(counter, cost, 0, charged, nil)
		}
	}
	return nil
}

// cleanRefund takes the refund c off its counter (refund), and gives its
// tally back when that is done or the counter it was charged to is gone
// (with its bucket's lease, even if a counter of the same key was made
// again since: nothing of it is left to give back). A refund whose write
// may have been applied (its answer lost), whose counter is corrupt, or
// whose counter holds less than it and the done entry's cost, is dropped,
// never tried twice: its charge stays until the bucket ends (FLEET-14).
// An error (nothing written) keeps it queued.
func (s *Store) cleanRefund(c cleanup) error {
	taken, err := s.refund(c.counter, c.take, c.keep, c.rev, nil)
	if taken && c.cost > 0 {
		s.mu.Lock()
		s.charge(c.end, -c.cost, 0)
		s.mu.Unlock()
	}
	return err
}

// cleanStray deletes c's counter, a usage counter without a lease
// (FLEET-33) or of a bucket over (FLEET-37), in one transaction while it
// is unchanged since it was read (its mod revision) and still has the
// lease it was read with: one written since, or put under another lease
// by a node's charge, is kept (a later read finds it again if it is
// still one to delete). An error (nothing written) keeps it queued.
func (s *Store) cleanStray(c cleanup) error {
	then := []clientv3.Op{clientv3.OpDelete(c.counter)}
	return s.call("unclaim", func(ctx context.Context) error {
		r, err := s.cli.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(c.counter), "=", c.rev),
			clientv3.Compare(clientv3.LeaseValue(c.counter), "=", clientv3.LeaseID(c.lease))).Then(then...).Commit()
		if err == nil {
			err = replyFits(r, then, nil) // FLEET-28
		}
		return err
	})
}

// untally gives back to this process's budget tally the charge of c's
// entry, which is gone from etcd (FLEET-13).
func (s *Store) untally(c cleanup) {
	if c.cost <= 0 {
		return
	}
	s.mu.Lock()
	s.charge(c.end, -c.cost, -1)
	s.mu.Unlock()
}

// Unclaim implements ledger.SharedStore: the claim key is deleted if it is
// still the claim this process made (its create revision: never a later
// claim of the key under the same session lease); unless a Running under
// it succeeded (the handler may have run), the running entry made with it
// or after it goes too, and its charge is given back (FLEET-7, FLEET-11):
// a message refused by its checks leaves no record. One transaction; a
// delete that fails is queued and retried, with a backoff, for as long as
// the process lives (cleaner): a live node never blocks a key.
//
// While it runs, a copy of the message that finds the claim untracked
// waits (claimHeld) instead of deleting the claim alone under the undo
// (FLEET-21): marked before the claim is forgotten.
func (s *Store) Unclaim(k ledger.Key) {
	s.cleaner.unclaiming(k, 1)
	defer s.cleaner.unclaiming(k, -1)
	s.mu.Lock()
	ci, ok := s.claims[k]
	delete(s.claims, k)
	delete(s.running, k)
	s.mu.Unlock()
	if !ok {
		return
	}
	if !ci.ran && ci.entry != nil && s.undoClaim(k, ci) == nil {
		return
	}
	c := cleanup{k: k, rev: ci.rev, entry: !ci.ran}
	if c.entry && ci.entry != nil { // charged to the tally with the claim
		c.cost, c.end = ci.entry.cost, ci.entry.e.end
	}
	if s.clean(c) != nil {
		s.cleaner.add(c) // queued before the mark ends: never a gap
	}
}

// undoClaim deletes the claim ci and the running entry made with it, and
// gives its cost back to the counter it charged, in one transaction while
// both are unchanged; the refund is a nested transaction compared on the
// counter's mod revision, retried alone (at most 16 times) when another
// write changed the counter. An error (or a claim or entry that changed)
// leaves the rest to clean.
func (s *Store) undoClaim(k ledger.Key, ci claimInfo) error {
	ce := ci.entry
	ks := keysOf(s.prefix, k)
	u := usagePrefix(s.prefix, hexOf(ce.e.principal))
	pl, err := s.hot.lock(u, s.lockBy())
	if err != nil {
		return err // clean deletes it, without the lock
	}
	defer s.hot.unlock(pl)
	n, rev := pl.guess(ce.counter, ce.n, ce.nrev) // as this process last wrote it
	left := max(n-ce.cost, 0)
	r, err := s.txn("unclaim", k, u, []clientv3.Cmp{
		clientv3.Compare(clientv3.CreateRevision(ks.claim), "=", ci.rev),
		clientv3.Compare(clientv3.ModRevision(ks.entry), "=", ce.rev),
	}, []clientv3.Op{clientv3.OpDelete(ks.claim), clientv3.OpDelete(ks.entry),
		clientv3.OpTxn(chargedTo(ce.counter, rev, ce.rev), []clientv3.Op{takeOff(ce.counter, left)}, nil),
		s.counterRead(u)}, nil)
	if err != nil {
		return err
	}
	if !r.Succeeded || len(r.Responses) != 4 {
		return amp.Named(amp.CodeUnavailable, ErrClaimLost, "the claim or its entry changed")
	}
	s.mu.Lock()
	s.charge(ce.e.end, -ce.cost, -1)
	s.mu.Unlock()
	pl.learn(s, r.Responses[3], r.Header.Revision)
	if in := r.Responses[2].GetResponseTxn(); in == nil || !in.Succeeded {
		s.refund(ce.counter, ce.cost, 0, ce.rev, pl)
	}
	return nil
}

// refund takes cost off counter, compared on its mod revision, at most
// 16 times; after that (or an error) the charge stays until the counter
// expires with its bucket: over-charging a share briefly is safe. The
// cost is taken only off the counter that was charged with it, at
// revision charged: one created since (its key deleted with its lease,
// then written again by another entry) holds none of it and counts as
// gone; and never below keep, what the charged entry still costs there: a
// counter holding less than cost+keep is left as it is. pl, held by the
// caller, forgets its counters' guess; nil when the caller does not hold
// it (clean). taken reports that the cost was taken off, or that the
// counter is gone (nothing left to take); err, that nothing was written
// and a later try may take it (the counter could not be read, or kept
// changing). A write whose answer was lost, a corrupt counter, or one
// holding too little, reports neither: never taken twice.
func (s *Store) refund(counter string, cost, keep, charged int64, pl *principalLock) (taken bool, err error) {
	for attempt := 0; attempt < maxRetries; attempt++ {
		n, rev, created, err := s.readCounterOf("unclaim", counter)
		if amp.NameOf(err) == ErrCounterCorrupt {
			return false, nil // FLEET-18
		}
		if err != nil || rev == 0 || created > charged {
			return err == nil, err
		}
		if n < cost+keep {
			return false, nil // less than the charge it gives back: another's
		}
		var r *clientv3.TxnResponse
		err = s.call("unclaim", func(ctx context.Context) (err error) {
			r, err = s.cli.Txn(ctx).If(chargedTo(counter, rev, charged)...).
				Then(takeOff(counter, n-cost)).Commit()
			return err
		})
		if err != nil {
			return false, nil
		}
		if r.Succeeded {
			if pl != nil {
				pl.snap = nil // one counter compared: the others are not known
			}
			return true, nil
		}
		contended(attempt)
	}
	return false, contendedErr()
}

// chargedTo compares counter on its mod revision rev (unchanged since it
// was read) and on its create revision: made at or before charged, the
// revision at which an entry's cost was added to it, so that the refund
// of that cost is never taken off a counter made again since under the
// same key (its lease ended meanwhile: FLEET-20, review 29).
func chargedTo(counter string, rev, charged int64) []clientv3.Cmp {
	return []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(counter), "=", rev),
		clientv3.Compare(clientv3.CreateRevision(counter), "<", charged+1)}
}

// Package trust decides what a store trusts: its trust state (keys and
// their scopes, thresholds, revocations, the chains of applied trust
// statements, heartbeats, freshness policies, signed-time floors and the
// installed bundles these judge) is a value, State, and every change is a
// function of that value, the signed bytes of a statement and a time:
//
//	next, effects, err := trust.ApplyRevocation(state, data, now)
//
// Nothing here opens a file, reads a clock or holds a lock. A refused
// statement changes nothing (err is set, next and effects are nil); an
// accepted one returns the state after it, which shares no memory with
// the state given (State.Clone is deep), and its Effects: what a store
// must write (the records that differ between the two states, the
// statement to keep, the audit events) in the same transaction in which it
// loaded the state. Package resolver loads State from its bbolt store,
// calls these functions and saves their Effects. What a store may keep
// without bound (revoked bundle versions, DID documents) is not loaded
// into a State: the store backs the State's Records, a read-only lookup
// over the same transaction, which a function asks only for the versions
// and bundles it judges, so no decision costs more as such records
// accumulate. The verdicts on an installed bundle (Stale, Floor, Vouches)
// are functions of the same value, so docs/ARCHITECTURE.md's rule holds:
// trust decisions are functions of bytes, a key set and a time.
//
// The rules are those of docs/FORMAT.md §5 (thresholds), §21
// (revocations), §22 (trust statements), §23 (heartbeats) and "Trust
// policy files", and of docs/SPEC-DECISIONS.md TRUST-5 and TRUST-8 (time
// floors).
package trust

package resolver

// setFaults makes s call fn at each named step of an import and of a
// removal (Store.fault); a non-nil error aborts there. It exists only in
// this package's test build: production code cannot inject faults.
func setFaults(s *Store, fn func(step string) error) { s.faults = fn }

// countDecodes has s tell fn of every revoked or DID record its trust
// decisions decode (truststate.go), with the record's bucket.
func countDecodes(s *Store, fn func(bucket string)) { s.decoded = fn }

// closeState reports whether Close has begun on s (its in-flight writes
// cancelled) and how many Imports and checks Close waits for: the
// states the Close tests wait for, rather than sleeping and hoping.
func closeState(s *Store) (closing bool, inflight int) {
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	return s.closed, s.inflight
}

// lowerLimits has s use the bounds set leaves in its storeLimits: a test
// lowers a bound on its own store, never for the package.
func lowerLimits(s *Store, set func(*storeLimits)) { set(&s.lim) }

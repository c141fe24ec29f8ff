//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package mirror

// lockSpool takes no lock where flock is not available (Windows, and the
// Unix systems without it): concurrent syncs of one spool folder are not
// kept apart there (docs/SPEC-DECISIONS.md MIRROR-18).
func lockSpool(string) (unlock func(), busy bool, err error) { return func() {}, false, nil }

// openNoFollow is 0 where the system's flag is not at hand: openPart
// still removes a link it finds, but a link put there between its check
// and its open is followed.
const openNoFollow = 0

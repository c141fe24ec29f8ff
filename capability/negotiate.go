package capability

import (
	"sort"
	"strings"

	"github.com/ampbundle/ampbundle/amp"
)

// Negotiate selects the concrete capability id to invoke for capability
// name, given the requester's hints and the versions the provider has
// (§6.3), in exactly this order:
//
//  1. the preferred version, if the provider has it;
//  2. else the first version of the acceptable list that the provider has;
//  3. else, if a range is given, the highest provider version it contains;
//  4. else 4003 version_mismatch.
//
// "Has" means the same version string (build metadata included; see
// Version). "Highest" is SemVer precedence, ties broken by the version
// string bytewise so the choice is deterministic. A provider with no
// versions is 4002 capability_not_found. Hints with nothing in them go
// straight to step 4.
//
// provided is not modified; name is copied into the result unchecked.
func Negotiate(name string, h NegotiateHints, provided []Version) (ID, error) {
	if len(provided) == 0 {
		return ID{}, notProvided()
	}
	if !h.Preferred.IsZero() && has(provided, h.Preferred) {
		return ID{Name: name, Version: h.Preferred}, nil
	}
	for _, v := range h.Acceptable {
		if !v.IsZero() && has(provided, v) {
			return ID{Name: name, Version: v}, nil
		}
	}
	if !h.Range.IsZero() {
		best := -1
		for i := range provided {
			v := &provided[i]
			if h.Range.contains(v) && (best < 0 || compareTotal(v, &provided[best]) > 0) {
				best = i
			}
		}
		if best >= 0 {
			return ID{Name: name, Version: provided[best]}, nil
		}
	}
	return ID{}, amp.NewError(amp.CodeVersionMismatch, "no provided version satisfies the negotiation hints")
}

// MatchExact is the check of a by-name CAP_INVOKE with a version (§7.1):
// it returns the capability id if the provider has exactly that version
// (the same string), 4003 version_mismatch if it does not, and 4002
// capability_not_found if it has no versions at all.
func MatchExact(name string, v Version, provided []Version) (ID, error) {
	if len(provided) == 0 {
		return ID{}, notProvided()
	}
	if !v.IsZero() && has(provided, v) {
		return ID{Name: name, Version: v}, nil
	}
	return ID{}, amp.NewError(amp.CodeVersionMismatch, "the requested version is not provided")
}

func notProvided() error {
	return amp.NewError(amp.CodeCapabilityNotFound, "no version of the capability is provided")
}

func has(vs []Version, v Version) bool {
	for i := range vs {
		if vs[i].raw == v.raw {
			return true
		}
	}
	return false
}

// compareTotal is the total order on versions: SemVer precedence, then the
// version string bytewise.
func compareTotal(a, b *Version) int {
	if c := compareVersions(a, b); c != 0 {
		return c
	}
	return strings.Compare(a.raw, b.raw)
}

// CompareVersions compares two versions in the order o (§6.5): ascending
// for OrderOldestFirst, descending for any other value (OrderNewestFirst
// and the empty Order). The order is total: SemVer precedence, and between
// versions of equal precedence (differing only in build metadata) the
// version string bytewise, so sorting is deterministic.
func (o Order) CompareVersions(a, b Version) int {
	c := compareTotal(&a, &b)
	if o == OrderOldestFirst {
		return c
	}
	return -c
}

// CompareIDs compares two capability ids by the §6.5 sort key: name
// ascending (bytewise), then version by CompareVersions. Paging code can
// use it to find the first id after a cursor's last one.
func (o Order) CompareIDs(a, b ID) int {
	if c := strings.Compare(a.Name, b.Name); c != 0 {
		return c
	}
	return o.CompareVersions(a.Version, b.Version)
}

// SortDescriptors sorts ds in place by the §6.5 sort key of order o (see
// CompareIDs): (name ASC, version DESC) for newest-first, (name ASC,
// version ASC) for oldest-first. The sort is stable, so descriptors with
// identical ids keep their relative order.
func SortDescriptors(ds []Descriptor, o Order) {
	sort.SliceStable(ds, func(i, j int) bool {
		a, b := &ds[i], &ds[j]
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c < 0
		}
		return o.CompareVersions(a.Version, b.Version) < 0
	})
}

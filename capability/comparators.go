package capability

// Comparator is one comparator of a Range, as ParseRange read it.
type Comparator struct {
	// Op is "=", ">", ">=", "<" or "<=" ("=" also for a bare version).
	Op string
	// Version is the comparator's version.
	Version Version
}

// opText spells each operator as a range writes it.
var opText = [...]string{opEQ: "=", opGT: ">", opGE: ">=", opLT: "<", opLE: "<="}

// Comparators returns the comparators of r, in the order written (none
// for the zero Range), so that a caller that searches sorted versions
// (spans, as anyContained does) reads what Contains reads instead of
// parsing the range's string again. The slice is the caller's.
func (r Range) Comparators() []Comparator {
	out := make([]Comparator, len(r.cmps))
	for i, c := range r.cmps {
		out[i] = Comparator{Op: opText[c.op], Version: c.v}
	}
	return out
}

// HasPrerelease reports whether v has a prerelease ("1.2.3-rc.1"): such a
// version is contained in a Range only when a comparator of it carries a
// prerelease on v's major.minor.patch (SameCore).
func (v Version) HasPrerelease() bool { return v.pre != "" }

// SameCore reports whether v and w have the same major.minor.patch.
func (v Version) SameCore(w Version) bool { return v.sameCore(&w) }

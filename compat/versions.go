package compat

// Version names the two schemas of one capability version in a Source.
type Version struct {
	Src    *Source
	Input  string // artifact key of the input schema
	Output string // artifact key of the output schema
}

// PairReport is what one version pair owes its callers: the input side
// backward compatible (requests valid for the old version are valid for the
// new) and the output side forward compatible (results of the new version
// are valid for the old).
type PairReport struct {
	Input  Report `json:"input"`
	Output Report `json:"output"`
}

// Verdict is the pair's overall verdict: Incompatible if either side is,
// else Unknown if either side is, else Compatible.
func (p PairReport) Verdict() Verdict {
	return worst(p.Input.Verdict, p.Output.Verdict)
}

func worst(a, b Verdict) Verdict {
	if a == Incompatible || b == Incompatible {
		return Incompatible
	}
	if a == Unknown || b == Unknown {
		return Unknown
	}
	return Compatible
}

// Versions checks whether a caller written for old is served correctly by
// a provider of new: old's requests valid for new's input, new's results
// valid for old's output.
func Versions(old, new Version) PairReport {
	return versionsWithin(old, new, nil, nil)
}

// versionsWithin is Versions taking its comparisons from budget too, when
// not nil (MatrixOf): Backward on the input side, Forward on the output;
// what the checks read of listed values is added to reads, when not nil.
func versionsWithin(old, new Version, budget *int, reads *valueReads) PairReport {
	return PairReport{
		Input:  subsumes(old.Src, old.Input, new.Src, new.Input, budget, reads),
		Output: subsumes(new.Src, new.Output, old.Src, old.Output, budget, reads),
	}
}

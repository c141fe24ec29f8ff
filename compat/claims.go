package compat

import (
	"errors"
	"slices"
	"sort"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/capability"
)

// Error names of claim checks.
const (
	// ErrClaimUnproven: the builder refuses a policy or supported_ranges
	// that the verdicts contradict.
	ErrClaimUnproven amp.ErrName = "compatibility_claim_unproven"
	// ErrFalseClaim: a bundle's signed claims differ from the verdicts the
	// importer derives, or its policy contradicts them.
	ErrFalseClaim amp.ErrName = "false_compatibility_claim"
	// ErrClaimsTooCostly: deriving a bundle's claims (at build and at
	// import) would take more than MaxBundleSteps comparison steps in
	// all; the bundle is refused whole, whatever its claims say.
	ErrClaimsTooCostly amp.ErrName = "compatibility_claims_too_costly"
)

// MaxBundleSteps bounds the comparison steps (MaxSteps counts them per
// check; each pass over MaxValueWork's units counts too) that deriving
// the claims of one bundle spends in all: one budget shared by every
// schema comparison of DeriveClaims, Annotate (build) or VerifyClaims
// (import), so that 10,000 descriptors of 256 signed claims each (2.56
// million comparisons, each within MaxSteps) cannot cost an importer
// hours. Past it Annotate and VerifyClaims refuse the bundle
// (ErrClaimsTooCostly) and DeriveClaims reports the claims left as
// unknown (docs/SPEC-DECISIONS.md COMPAT-11). A comparison of one pair
// of schema keys is made once per bundle and reused (for the first 65,536
// pairs compared; the rest are compared again, from the budget).
//
// A unit costs at most about 4.5 µs of CPU on the machine of
// docs/PERFORMANCE.md, whatever its kind (BenchmarkBundleBudgetUnitCost:
// name lookups the dearest, an honest comparison's step about as dear),
// so the budget is a few seconds of CPU; the former 10,000,000 units
// cost up to 45 s (docs/SPEC-DECISIONS.md COMPAT-21). An honest capability of 100
// versions each covering every other, with schemas of their own
// (9,900 claims), takes about half of it.
const MaxBundleSteps = 1_000_000

// DeriveClaims computes, for every descriptor that declares a policy, the
// claims for callers of each other version of the same capability among descs that its
// SupportedRanges cover (sorted by version; nil when none). Schemas are
// read from src by the descriptors' artifact keys.
//
// Which versions a descriptor's ranges cover is found without trying every
// descriptor against every range (newCoverIndex): its cost is n·log n in
// the descriptors and ranges, plus one schema comparison per claim.
func DeriveClaims(descs []capability.Descriptor, src *Source) [][]capability.CompatClaim {
	return deriveClaims(newCoverIndex(descs), src)
}

// deriveClaims is DeriveClaims over the index ix of the descriptors (the
// tests read its probes).
func deriveClaims(ix *coverIndex, src *Source) [][]capability.CompatClaim {
	descs := ix.descs
	out := make([][]capability.CompatClaim, len(descs))
	for i, d := range descs {
		if d.Policy == "" {
			continue // no policy declared: exact version only, nothing claimed
		}
		out[i] = ix.claims(d, ix.cover(d).callers(), src)
	}
	return out
}

// claims computes d's claims for callers (indexes into the descriptors,
// ascending), sorted by version; nil when there are none. Every
// comparison takes its steps from the bundle's budget (ix.budget,
// MaxBundleSteps), and one pair of schema keys is compared once per
// index (pair, for up to maxCachedVerdicts pairs); past the budget the
// verdicts are unknown and ix.spent() says so.
func (ix *coverIndex) claims(d capability.Descriptor, callers []int, src *Source) []capability.CompatClaim {
	var cs []capability.CompatClaim
	for _, j := range callers {
		caller := ix.descs[j]
		in := ix.pair(src, caller.InputSchema.ArtifactKey, d.InputSchema.ArtifactKey)
		out := ix.pair(src, d.OutputSchema.ArtifactKey, caller.OutputSchema.ArtifactKey)
		cs = append(cs, capability.CompatClaim{Version: caller.Version, Input: string(in), Output: string(out)})
	}
	capability.SortClaims(cs)
	return cs
}

// policyProblem names how a descriptor's policy contradicts its claims, or
// "" when it does not.
func policyProblem(d capability.Descriptor, claims []capability.CompatClaim) string {
	switch d.Policy.Effective() {
	case capability.PolicyBridge:
		if len(d.SupportedRanges) == 0 {
			return "policy bridge needs supported_ranges"
		}
		if d.Bridge == nil {
			return "policy bridge needs a bridge"
		}
	case capability.PolicyRange:
		if len(d.SupportedRanges) == 0 {
			return "policy range needs supported_ranges"
		}
		for _, c := range claims {
			if !c.Compatible() {
				return "supported_ranges cover " + c.Version.String() + ", whose callers are not proven compatible (input " + c.Input + ", output " + c.Output + ")"
			}
		}
	}
	return ""
}

// Annotate is what a bundle builder does: it sets every descriptor's
// CompatClaims to the derived verdicts and refuses (ErrClaimUnproven,
// code 0) a descriptor whose policy the verdicts contradict. descs is not
// modified; the result is a new slice.
func Annotate(descs []capability.Descriptor, src *Source) ([]capability.Descriptor, error) {
	return annotate(newCoverIndex(descs), src)
}

// annotate is Annotate over the index ix of the descriptors (the tests
// lower its budget).
func annotate(ix *coverIndex, src *Source) ([]capability.Descriptor, error) {
	descs := ix.descs
	out := make([]capability.Descriptor, len(descs))
	for i, d := range descs {
		cov := ix.cover(d)
		var claims []capability.CompatClaim
		if d.Policy != "" {
			claims = ix.claims(d, cov.callers(), src)
			if ix.spent() {
				return nil, tooCostly(d)
			}
		}
		if why := policyProblem(d, claims); why != "" {
			return nil, amp.Named(0, ErrClaimUnproven, "%s: %s", d.ID().String(), why)
		}
		if err := checkDescriptorBridge(ix, cov, d, src); err != nil {
			return nil, err
		}
		d.CompatClaims = claims
		out[i] = d
	}
	return out, nil
}

// VerifyClaims is what an importer does: it re-derives the verdicts and
// refuses (ErrFalseClaim, code 0) a descriptor whose signed claims are
// more permissive than the derived ones (a side signed "compatible" that
// is not derived so, a version added, missing or reordered) or whose
// policy contradicts either. A side signed "unknown" or "incompatible"
// where the importer's checker now decides more is accepted and kept as
// signed: it serves no caller the derived verdict would refuse, and a
// bundle signed by an older checker keeps importing (COMPAT-5 in
// docs/SPEC-DECISIONS.md). A descriptor with neither a policy nor
// claims (a bundle from before policies) is left as it is: it behaves as
// strict.
//
// Each descriptor's covered versions are counted before any schema is
// compared: a descriptor whose signed claims do not number them is
// refused without a comparison, so the comparisons are at most the
// signed claims (capability.MaxCompatClaims per decoded descriptor).
func VerifyClaims(descs []capability.Descriptor, src *Source) error {
	return verifyClaims(newCoverIndex(descs), src)
}

// verifyClaims is VerifyClaims over the index ix of the descriptors (the
// tests read its probes).
func verifyClaims(ix *coverIndex, src *Source) error {
	for _, d := range ix.descs {
		if d.Policy == "" && d.CompatClaims == nil {
			continue
		}
		cov := ix.cover(d)
		var derived []capability.CompatClaim
		if d.Policy != "" {
			if cov.count() != len(d.CompatClaims) {
				return falseClaims(d)
			}
			derived = ix.claims(d, cov.callers(), src)
			if ix.spent() {
				return tooCostly(d)
			}
		}
		if !noMorePermissive(d.CompatClaims, derived) {
			return falseClaims(d)
		}
		for _, cs := range [][]capability.CompatClaim{d.CompatClaims, derived} {
			if why := policyProblem(d, cs); why != "" {
				return amp.Named(0, ErrFalseClaim, "%s: %s", d.ID().String(), why)
			}
		}
		if err := checkDescriptorBridge(ix, cov, d, src); err != nil {
			return err
		}
	}
	return nil
}

func falseClaims(d capability.Descriptor) error {
	return amp.Named(0, ErrFalseClaim, "%s: the signed compatibility claims claim more than the verdicts derived from the bundle's schemas", d.ID().String())
}

// noMorePermissive reports whether the signed claims name exactly the
// derived claims' versions, in order, and call no side compatible that
// the derived verdict does not.
func noMorePermissive(signed, derived []capability.CompatClaim) bool {
	if len(signed) != len(derived) {
		return false
	}
	for i, c := range signed {
		d := derived[i]
		if c.Version != d.Version {
			return false
		}
		if (c.Input == capability.VerdictCompatible && d.Input != capability.VerdictCompatible) ||
			(c.Output == capability.VerdictCompatible && d.Output != capability.VerdictCompatible) {
			return false
		}
	}
	return true
}

// checkDescriptorBridge re-checks the bridge of a descriptor under policy
// bridge from the bundle's own bytes: the bytes have the reference's hash,
// parse (ParseBridge), and remove no member that the provider's input
// schema requires (input side) or that the output schema of any carried
// version its supported_ranges cover requires (output side; CheckBridge).
// Any failure is ErrBridgeMalformed or ErrBridgeDropsRequired, code 0.
func checkDescriptorBridge(ix *coverIndex, cov *coverage, d capability.Descriptor, src *Source) error {
	if d.Bridge == nil {
		return nil
	}
	id := d.ID().String()
	b, err := src.s.bridge(*d.Bridge)
	if errors.Is(err, errBridgeUnmatched) {
		return amp.Named(0, ErrBridgeMalformed, "%s: the bridge artifact is missing or does not match its hash", id)
	}
	if err != nil {
		return amp.Named(0, ErrBridgeMalformed, "%s: %s", id, amp.SafeMessage(err))
	}
	// The provider's input side once; the output side once per distinct
	// output schema of the covered callers. Each schema is decoded once
	// per Source (side.bridgeTarget), however many descriptors and
	// callers share it.
	load := func(key string) func() (any, error) {
		return func() (any, error) { return src.s.bridgeTarget(key) }
	}
	// Each schema object and each "required" entry the walks visit
	// costs the bundle's budget (ix.walk), as a listed value does: a
	// bridge's 64 removals against a "required" list of 533,015 names
	// must not cost an import a quarter of a second per descriptor
	// (docs/SPEC-DECISIONS.md COMPAT-22).
	inKey := d.InputSchema.ArtifactKey
	if err := ix.walk(func(left *int) error { return checkBridgeSide("input", b.Input, inKey, load(inKey), left) }); err != nil {
		return bridgeRefusal(d, err, "")
	}
	done := map[string]bool{}
	for _, j := range cov.callers() {
		caller := ix.descs[j]
		key := caller.OutputSchema.ArtifactKey
		if done[key] {
			continue
		}
		done[key] = true
		if err := ix.walk(func(left *int) error { return checkBridgeSide("output", b.Output, key, load(key), left) }); err != nil {
			return bridgeRefusal(d, err, caller.Version.String())
		}
	}
	return nil
}

// bridgeRefusal is the error of a bridge re-check of d that failed with
// err: the bundle's budget spent (errWalkSpent) is ErrClaimsTooCostly,
// anything else ErrBridgeDropsRequired, naming the callers' version when
// it is the output side's.
func bridgeRefusal(d capability.Descriptor, err error, callers string) error {
	if errors.Is(err, errWalkSpent) {
		return tooCostly(d)
	}
	if callers != "" {
		return amp.Named(0, ErrBridgeDropsRequired, "%s (for callers of %s): %s", d.ID().String(), callers, amp.SafeMessage(err))
	}
	return amp.Named(0, ErrBridgeDropsRequired, "%s: %s", d.ID().String(), amp.SafeMessage(err))
}

// walk runs a bridge side's check (checkBridgeSide) with what is left of
// the bundle's budget, in visits (valuesPerStep a unit), and charges the
// visits it made; the visits are counted over the bundle (ix.visits), so
// many short walks cost what one long one does. A walk that would spend
// the budget stops (errWalkSpent) at the first visit past it, and so does
// a later one: after it, ix.spent().
func (ix *coverIndex) walk(check func(left *int) error) error {
	allowed := (max(ix.budget, -1)+1)*valuesPerStep - ix.visits
	left := allowed
	err := check(&left)
	ix.visits += allowed - left
	ix.budget -= ix.visits / valuesPerStep
	ix.visits %= valuesPerStep
	if err == nil && ix.spent() {
		err = errWalkSpent
	}
	return err
}

// coverIndex finds which carried versions a descriptor's supported_ranges
// cover without trying every descriptor against every range, the n²
// × ranges × comparators walk a signed bundle of 10,000 descriptors would
// cost (docs/SPEC-DECISIONS.md COMPAT-11). Only versions of one name
// relate, so the descriptors are grouped by name, and each group's
// versions are sorted once by the total order (precedence, then the
// string), releases and prereleases apart. Over sorted versions a
// comparator holds for a prefix (<, <=), a suffix (>, >=) or a span (=),
// so a range is one span of the releases, found by one binary search per
// comparator, as in capability's anyContained. A prerelease is contained
// only when a comparator of the range carries a prerelease on its
// major.minor.patch (Range.Contains); those of one core are a span of the
// sorted prereleases too. Cost: n·log n to sort, O(comparators·log n) per
// range, and the covered versions themselves when they are listed.
type coverIndex struct {
	descs  []capability.Descriptor
	byName map[string]*nameVersions
	// read holds the comparators of each range string read so far: a
	// bundle repeats its ranges.
	read map[string][]capability.Comparator
	// probes counts the version comparisons (binary-search steps, first)
	// finding covered versions has made: the tests read and bound it.
	probes int64
	// budget is what is left of the bundle's comparison steps
	// (MaxBundleSteps); verdicts holds the pairs of schema keys compared
	// within it (pair; at most maxVerdicts, which newCoverIndex sets to
	// maxCachedVerdicts and the tests lower on their own index).
	budget      int
	verdicts    map[[2]string]Verdict
	maxVerdicts int
	// visits counts the bridge walks' visits not yet charged to budget
	// (fewer than valuesPerStep; walk).
	visits int
}

// nameVersions are the carried versions of one capability name; rel and
// pre leave the zero Version out (no range contains it).
type nameVersions struct {
	rel, pre []member // each sorted by the total order
}

type member struct {
	i int                // index into the descriptors
	v capability.Version // the descriptor's version
}

func newCoverIndex(descs []capability.Descriptor) *coverIndex {
	ix := &coverIndex{descs: descs, byName: map[string]*nameVersions{}, read: map[string][]capability.Comparator{},
		budget: MaxBundleSteps, verdicts: map[[2]string]Verdict{}, maxVerdicts: maxCachedVerdicts}
	for i := range descs {
		d := &descs[i]
		g := ix.byName[d.Name]
		if g == nil {
			g = &nameVersions{}
			ix.byName[d.Name] = g
		}
		if d.Version.IsZero() {
			continue
		}
		if !d.Version.HasPrerelease() {
			g.rel = append(g.rel, member{i: i, v: d.Version})
			continue
		}
		g.pre = append(g.pre, member{i: i, v: d.Version})
	}
	total := func(a, b member) int { return capability.OrderOldestFirst.CompareVersions(a.v, b.v) }
	for _, g := range ix.byName {
		slices.SortStableFunc(g.rel, total)
		slices.SortStableFunc(g.pre, total)
	}
	return ix
}

// maxCachedVerdicts bounds the pairs of schema keys coverIndex.pair
// keeps: a bundle whose schemas are all distinct could otherwise keep one
// entry per claim (millions) without ever reusing one. A bundle that
// repeats its schemas, the case the cache is for, has few distinct pairs.
// Each index carries it (coverIndex.maxVerdicts).
const maxCachedVerdicts = 1 << 16

// pair is the verdict of subsumes(producer, acceptor) within the
// bundle's budget, computed once per pair of keys (up to
// ix.maxVerdicts pairs; beyond, each is compared again, from the
// budget): a verdict depends on the two schemas alone. A comparison cut
// short by the budget is not kept.
func (ix *coverIndex) pair(src *Source, producer, acceptor string) Verdict {
	k := [2]string{producer, acceptor}
	if v, ok := ix.verdicts[k]; ok {
		return v
	}
	v := subsumes(src, producer, src, acceptor, &ix.budget, nil).Verdict
	if !ix.spent() && len(ix.verdicts) < ix.maxVerdicts {
		ix.verdicts[k] = v
	}
	return v
}

// spent reports whether the bundle's comparison budget is used up.
func (ix *coverIndex) spent() bool { return ix.budget < 0 }

// tooCostly is ErrClaimsTooCostly for the bundle, naming the descriptor
// whose claims passed the budget.
func tooCostly(d capability.Descriptor) error {
	return amp.Named(0, ErrClaimsTooCostly, "%s: deriving the bundle's compatibility claims takes more than %d comparison steps", d.ID().String(), MaxBundleSteps)
}

// span is [lo, hi) of the indexes of l.
type span struct{ lo, hi int }

// coverage is what one descriptor's supported_ranges cover among the
// carried versions of its name: spans of the group's releases and
// prereleases (merged, ascending), less the versions equal to the
// descriptor's own (its own and duplicates: never a caller).
type coverage struct {
	ix       *coverIndex
	g        *nameVersions
	rel, pre []span
	// relOwn and preOwn are the spans of versions equal to the
	// descriptor's own.
	relOwn, preOwn span
	d              capability.Descriptor
	listed         []int
	done           bool
}

// cover finds what d's supported_ranges cover.
func (ix *coverIndex) cover(d capability.Descriptor) *coverage {
	cov := &coverage{ix: ix, g: ix.byName[d.Name], d: d}
	if cov.g == nil || len(d.SupportedRanges) == 0 {
		return cov
	}
	g := cov.g
	for _, r := range d.SupportedRanges {
		cs, ok := ix.read[r.String()]
		if !ok {
			cs = r.Comparators()
			ix.read[r.String()] = cs
		}
		if len(cs) == 0 {
			continue // the zero Range contains nothing
		}
		if s := ix.within(g.rel, cs); s.lo < s.hi {
			cov.rel = append(cov.rel, s)
		}
		if len(g.pre) == 0 {
			continue
		}
		s := ix.within(g.pre, cs)
		for _, c := range cs {
			if !c.Version.HasPrerelease() || s.lo >= s.hi {
				continue
			}
			// The prereleases of c's major.minor.patch: from the first
			// whose core is not below c's (above c, or c's core; strict
			// SemVer writes a core one way) to the first whose core is
			// above it.
			from := ix.first(g.pre, func(m *member) bool { return m.v.SameCore(c.Version) || m.v.Compare(c.Version) > 0 })
			to := ix.first(g.pre, func(m *member) bool { return !m.v.SameCore(c.Version) && m.v.Compare(c.Version) > 0 })
			if lo, hi := max(s.lo, from), min(s.hi, to); lo < hi {
				cov.pre = append(cov.pre, span{lo, hi})
			}
		}
	}
	cov.rel, cov.pre = merge(cov.rel), merge(cov.pre)
	own := func(l []member) span {
		return span{
			ix.first(l, func(m *member) bool { return capability.OrderOldestFirst.CompareVersions(m.v, d.Version) >= 0 }),
			ix.first(l, func(m *member) bool { return capability.OrderOldestFirst.CompareVersions(m.v, d.Version) > 0 }),
		}
	}
	cov.relOwn, cov.preOwn = own(g.rel), own(g.pre)
	return cov
}

// first returns the least index k of l with after(&l[k]) (false for a
// prefix of l, true for the rest), or len(l).
func (ix *coverIndex) first(l []member, after func(*member) bool) int {
	return sort.Search(len(l), func(k int) bool {
		ix.probes++
		return after(&l[k])
	})
}

// within is the span of l (sorted by precedence) whose versions every
// comparator of cs holds for, by precedence alone.
func (ix *coverIndex) within(l []member, cs []capability.Comparator) span {
	lo, hi := 0, len(l)
	for _, c := range cs {
		if lo >= hi {
			break
		}
		// The first version at or above c's, and the first above it.
		geq := func() int { return ix.first(l, func(m *member) bool { return m.v.Compare(c.Version) >= 0 }) }
		gt := func() int { return ix.first(l, func(m *member) bool { return m.v.Compare(c.Version) > 0 }) }
		switch c.Op {
		case "=":
			lo, hi = max(lo, geq()), min(hi, gt())
		case ">":
			lo = max(lo, gt())
		case ">=":
			lo = max(lo, geq())
		case "<":
			hi = min(hi, geq())
		case "<=":
			hi = min(hi, gt())
		}
	}
	return span{lo, hi}
}

// merge sorts spans and joins those that overlap or touch.
func merge(ss []span) []span {
	if len(ss) < 2 {
		return ss
	}
	slices.SortFunc(ss, func(a, b span) int { return a.lo - b.lo })
	out := ss[:1]
	for _, s := range ss[1:] {
		last := &out[len(out)-1]
		if s.lo <= last.hi {
			last.hi = max(last.hi, s.hi)
			continue
		}
		out = append(out, s)
	}
	return out
}

// count is the number of covered callers, without listing them.
func (cov *coverage) count() int {
	n := 0
	for _, ls := range []struct {
		spans []span
		own   span
	}{{cov.rel, cov.relOwn}, {cov.pre, cov.preOwn}} {
		for _, s := range ls.spans {
			n += s.hi - s.lo - max(0, min(s.hi, ls.own.hi)-max(s.lo, ls.own.lo))
		}
	}
	return n
}

// callers lists the covered callers: the indexes of the descriptors of
// d's name, other than d's version, whose version d's supported_ranges
// cover, ascending (the descriptors' order).
func (cov *coverage) callers() []int {
	if cov.done {
		return cov.listed
	}
	cov.done = true
	if cov.g == nil {
		return nil
	}
	var out []int
	for _, ls := range []struct {
		l     []member
		spans []span
		own   span
	}{{cov.g.rel, cov.rel, cov.relOwn}, {cov.g.pre, cov.pre, cov.preOwn}} {
		for _, s := range ls.spans {
			for k := s.lo; k < s.hi; k++ {
				if k < ls.own.lo || k >= ls.own.hi {
					out = append(out, ls.l[k].i)
				}
			}
		}
	}
	slices.Sort(out)
	cov.listed = out
	return out
}

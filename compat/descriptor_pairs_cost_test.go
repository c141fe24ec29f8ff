package compat

import (
	"crypto/sha256"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"reflect"
	"runtime"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/capability"
)

// pairFloodBundle is a signed bundle's worth of descriptors of one
// capability (bundle.MaxCapabilities), each under policy range with
// ranges of several comparators that cover no other carried version: the
// derived claims are all empty, so every cost is finding what the ranges
// cover. It returns the descriptors and the strings they were parsed from.
func pairFloodBundle(t testing.TB, n, ranges int) ([]capability.Descriptor, []string) {
	t.Helper()
	var texts []string
	descs := make([]capability.Descriptor, n)
	for i := range descs {
		v := fmt.Sprintf("1.%d.0", i)
		if i%10 == 9 {
			v = fmt.Sprintf("1.%d.0-rc.%d", i-1, i)
		}
		ver, err := capability.ParseVersion(v)
		if err != nil {
			t.Fatal(err)
		}
		texts = append(texts, v)
		d := capability.Descriptor{Name: "org.example.flood", Version: ver, Policy: capability.PolicyRange}
		for k := 0; k < ranges; k++ {
			// Its own version (never a caller), and versions no
			// descriptor carries, each range its own string.
			s := fmt.Sprintf(">=%s <=%s", v, v)
			if k > 0 {
				s = fmt.Sprintf(">=2.%d.%d-a <3.0.0", k, i)
			}
			r, err := capability.ParseRange(s)
			if err != nil {
				t.Fatal(err)
			}
			texts = append(texts, s)
			d.SupportedRanges = append(d.SupportedRanges, r)
		}
		descs[i] = d
	}
	return descs, texts
}

// TestManyDescriptorsClaimDerivationIsNotQuadratic: a publisher trusted
// for one namespace signs a bundle of 10,000 descriptors of one capability.
// Deriving and verifying its claims compared every pair of descriptors
// and tried every range for each (10^8 pairs × ranges × comparators, at
// import and build). The version comparisons must stay n·log n: at most a
// few binary searches per comparator (coverIndex.probes of the two
// indexes). The time is logged;
// its ratio to parsing the descriptors' versions and ranges once (at most
// 20 ×) is BenchmarkManyDescriptorsClaimDerivation's, not a test's: a busy
// machine cannot decide it.
func TestManyDescriptorsClaimDerivationIsNotQuadratic(t *testing.T) {
	const n, ranges = 10_000, 4
	descs, _ := pairFloodBundle(t, n, ranges)
	src := NewSource(memLoader{files: map[string][]byte{}})

	// The bound: per descriptor, its own span and, per range, two binary
	// searches per comparator over the releases and the prereleases, and
	// two per prerelease comparator; each search log2(n)+1 probes.
	nComparators := 0
	for _, d := range descs {
		for _, r := range d.SupportedRanges {
			cs := r.Comparators()
			nComparators += len(cs)
		}
	}
	log := bits.Len(uint(n)) + 1
	bound := int64(2 * (4*n + 4*nComparators) * log) // Derive and Verify

	derive, verify := newCoverIndex(descs), newCoverIndex(descs)
	runtime.GC()
	start := time.Now()
	claims := deriveClaims(derive, src)
	err := verifyClaims(verify, src)
	took := time.Since(start)
	probes := derive.probes + verify.probes

	if err != nil {
		t.Fatalf("VerifyClaims: %v", err)
	}
	for i, cs := range claims {
		if cs != nil {
			t.Fatalf("descriptor %d: claims %v, want none", i, cs)
		}
	}
	t.Logf("%d descriptors: %d version comparisons (bound %d), %v", n, probes, bound, took)
	if probes > bound {
		t.Errorf("%d version comparisons for %d descriptors, want at most %d (n·log n)", probes, n, bound)
	}
}

// BenchmarkManyDescriptorsClaimDerivation times what
// TestManyDescriptorsClaimDerivationIsNotQuadratic bounds by its count of
// version comparisons: deriving and verifying the claims of the 10,000
// descriptors of pairFloodBundle ("derive-verify"), against its primitive,
// parsing their versions and ranges once ("parse", what decoding the
// manifest already did). The ratio should stay a small multiple (the
// test's former bound was 20).
func BenchmarkManyDescriptorsClaimDerivation(b *testing.B) {
	const n, ranges = 10_000, 4
	descs, texts := pairFloodBundle(b, n, ranges)
	src := NewSource(memLoader{files: map[string][]byte{}})
	b.Run("derive-verify", func(b *testing.B) {
		for b.Loop() {
			DeriveClaims(descs, src)
			_ = VerifyClaims(descs, src)
		}
	})
	b.Run("parse", func(b *testing.B) {
		for b.Loop() {
			for _, x := range texts {
				if x[0] == '>' {
					_, _ = capability.ParseRange(x)
				} else {
					_, _ = capability.ParseVersion(x)
				}
			}
		}
	})
}

// TestSignedClaimsOfTheWrongCountAreRefusedBeforeAnySchemaComparison: a
// descriptor whose ranges cover every other of many carried versions,
// signed with fewer claims, is refused (false_compatibility_claim) without
// comparing a single schema: the schemas are absent, and comparing one
// would read the loader.
func TestSignedClaimsOfTheWrongCountAreRefusedBeforeAnySchemaComparison(t *testing.T) {
	const n = 2_000
	all, err := capability.ParseRange(">=0.0.0")
	if err != nil {
		t.Fatal(err)
	}
	descs := make([]capability.Descriptor, n)
	for i := range descs {
		v, _ := capability.ParseVersion(fmt.Sprintf("0.%d.0", i))
		descs[i] = capability.Descriptor{Name: "org.example.wide", Version: v, Policy: capability.PolicyRange,
			SupportedRanges: []capability.Range{all},
			InputSchema:     capability.SchemaRef{ArtifactKey: fmt.Sprintf("in/%d", i)},
			OutputSchema:    capability.SchemaRef{ArtifactKey: fmt.Sprintf("out/%d", i)}}
	}
	descs[0].CompatClaims = []capability.CompatClaim{{Version: descs[1].Version, Input: "compatible", Output: "compatible"}}
	l := &countingLoader{}
	err = VerifyClaims(descs, NewSource(l))
	if amp.NameOf(err) != ErrFalseClaim {
		t.Fatalf("VerifyClaims = %v, want %s", err, ErrFalseClaim)
	}
	if l.loads != 0 {
		t.Errorf("%d schema loads before refusing a descriptor whose claims do not number its covered versions, want 0", l.loads)
	}
}

type countingLoader struct{ loads int }

func (l *countingLoader) Load(string) ([]byte, error) { l.loads++; return nil, fmt.Errorf("absent") }
func (l *countingLoader) KeyForID(string) (string, bool) {
	return "", false
}

// TestCoveredVersionsAgreeWithThePairByPairWalk: on random bundles
// (several names, prereleases, build metadata, duplicate versions, ranges
// with prerelease comparators, every policy, bridges), DeriveClaims,
// Annotate and VerifyClaims answer exactly what the pair-by-pair code
// they replaced answered (kept below as old*).
func TestCoveredVersionsAgreeWithThePairByPairWalk(t *testing.T) {
	l, bridges := differentialFiles(t)
	rng := rand.New(rand.NewPCG(7, 11))
	iters := 3000
	if testing.Short() {
		iters = 300
	}
	for it := range iters {
		descs := randomBundle(rng, bridges)
		src := NewSource(l)
		got, want := DeriveClaims(descs, src), oldDeriveClaims(descs, src)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("bundle %d: DeriveClaims = %v, the pair-by-pair walk %v\n%v", it, got, want, describe(descs))
		}
		ga, gerr := Annotate(descs, src)
		wa, werr := oldAnnotate(descs, src)
		if fmt.Sprint(gerr) != fmt.Sprint(werr) || !reflect.DeepEqual(ga, wa) {
			t.Fatalf("bundle %d: Annotate = %v, the pair-by-pair walk %v\n%v", it, gerr, werr, describe(descs))
		}
		// Signed claims: the derived ones, or a forgery of them.
		for i := range descs {
			cs := want[i]
			switch rng.IntN(6) {
			case 0:
				cs = nil
			case 1:
				if len(cs) > 0 {
					cs = append([]capability.CompatClaim(nil), cs[1:]...)
				}
			case 2:
				if len(cs) > 0 {
					cs = append([]capability.CompatClaim(nil), cs...)
					cs[rng.IntN(len(cs))].Input = capability.VerdictCompatible
				}
			case 3:
				cs = append(append([]capability.CompatClaim(nil), cs...), capability.CompatClaim{Version: descs[rng.IntN(len(descs))].Version, Input: "unknown", Output: "unknown"})
			}
			descs[i].CompatClaims = cs
		}
		gerr, werr = VerifyClaims(descs, src), oldVerifyClaims(descs, src)
		if fmt.Sprint(gerr) != fmt.Sprint(werr) {
			t.Fatalf("bundle %d: VerifyClaims = %v, the pair-by-pair walk %v\n%v", it, gerr, werr, describe(descs))
		}
	}
}

func describe(descs []capability.Descriptor) string {
	s := ""
	for i, d := range descs {
		var rs []string
		for _, r := range d.SupportedRanges {
			rs = append(rs, r.String())
		}
		s += fmt.Sprintf("%d %s %q %q %v\n", i, d.ID(), d.Policy, rs, d.SupportedRanges == nil)
	}
	return s
}

var (
	diffCores = []string{"0.0.0", "0.1.0", "1.0.0", "1.0.1", "1.2.0", "2.0.0"}
	diffPres  = []string{"", "", "", "alpha", "alpha.1", "beta", "rc.1", "1", "0"}
	diffBuild = []string{"", "", "", "+b1", "+b2"}
	diffOps   = []string{"", "=", ">", ">=", "<", "<="}
)

func randomVersion(rng *rand.Rand) string {
	v := diffCores[rng.IntN(len(diffCores))]
	if p := diffPres[rng.IntN(len(diffPres))]; p != "" {
		v += "-" + p
	}
	return v + diffBuild[rng.IntN(len(diffBuild))]
}

// differentialFiles is a pool of schemas whose pairs give every verdict,
// and bridge documents, one of which drops an output member.
func differentialFiles(t *testing.T) (memLoader, []*capability.SchemaRef) {
	l := memLoader{files: map[string][]byte{}}
	for k := range 3 {
		req := []string{`[]`, `["a"]`, `["a","b"]`}[k]
		l.files[fmt.Sprintf("in/%d", k)] = []byte(fmt.Sprintf(`{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"integer"}},"required":%s}`, req))
		l.files[fmt.Sprintf("out/%d", k)] = []byte(fmt.Sprintf(`{"type":"object","properties":{"a":{"type":"string"},"r":{"type":"string"}},"required":%s}`, []string{`[]`, `["r"]`, `["a","r"]`}[k]))
	}
	var refs []*capability.SchemaRef
	for k, doc := range []string{
		`{"bridge":1,"input":[],"output":[]}`,
		`{"bridge":1,"input":[],"output":[{"op":"drop-optional","path":"/r"}]}`,
		`{"bridge":1,"input":[{"op":"rename","from":"/x","to":"/a"}],"output":[]}`,
		`not json`,
	} {
		key := fmt.Sprintf("bridge/%d", k)
		l.files[key] = []byte(doc)
		sum := sha256.Sum256([]byte(doc))
		refs = append(refs, &capability.SchemaRef{ArtifactKey: key, HashAlg: capability.HashSHA256, Hash: sum[:]})
	}
	refs = append(refs, &capability.SchemaRef{ArtifactKey: "bridge/absent", HashAlg: capability.HashSHA256, Hash: make([]byte, 32)})
	return l, refs
}

func randomBundle(rng *rand.Rand, bridges []*capability.SchemaRef) []capability.Descriptor {
	n := 1 + rng.IntN(24)
	descs := make([]capability.Descriptor, n)
	for i := range descs {
		v, err := capability.ParseVersion(randomVersion(rng))
		if err != nil {
			panic(err)
		}
		if i > 0 && rng.IntN(8) == 0 {
			v = descs[rng.IntN(i)].Version // a duplicate
		}
		d := capability.Descriptor{
			Name:         []string{"a.x", "b.y", "a.x"}[rng.IntN(3)],
			Version:      v,
			InputSchema:  capability.SchemaRef{ArtifactKey: fmt.Sprintf("in/%d", rng.IntN(3))},
			OutputSchema: capability.SchemaRef{ArtifactKey: fmt.Sprintf("out/%d", rng.IntN(3))},
			Policy:       []capability.Policy{"", capability.PolicyStrict, capability.PolicyRange, capability.PolicyRange, capability.PolicyBridge}[rng.IntN(5)],
		}
		if rng.IntN(6) > 0 {
			d.SupportedRanges = []capability.Range{}
			for range rng.IntN(4) {
				s := ""
				for c := range 1 + rng.IntN(3) {
					if c > 0 {
						s += " "
					}
					s += diffOps[rng.IntN(len(diffOps))] + randomVersion(rng)
				}
				if rng.IntN(10) == 0 {
					d.SupportedRanges = append(d.SupportedRanges, capability.Range{}) // the zero Range
					continue
				}
				r, err := capability.ParseRange(s)
				if err != nil {
					panic(fmt.Sprintf("%q: %v", s, err))
				}
				d.SupportedRanges = append(d.SupportedRanges, r)
			}
		}
		if d.Policy == capability.PolicyBridge && rng.IntN(5) > 0 {
			d.Bridge = bridges[rng.IntN(len(bridges))]
		}
		descs[i] = d
	}
	return descs
}

// The code DeriveClaims, Annotate, VerifyClaims and checkDescriptorBridge
// replaced: every pair of descriptors, every range for each.

func oldDeriveClaims(descs []capability.Descriptor, src *Source) [][]capability.CompatClaim {
	out := make([][]capability.CompatClaim, len(descs))
	for i, d := range descs {
		if d.Policy == "" {
			continue
		}
		var cs []capability.CompatClaim
		for j, caller := range descs {
			if i == j || caller.Name != d.Name || caller.Version == d.Version || !oldCovered(d, caller.Version) {
				continue
			}
			r := Versions(
				Version{Src: src, Input: caller.InputSchema.ArtifactKey, Output: caller.OutputSchema.ArtifactKey},
				Version{Src: src, Input: d.InputSchema.ArtifactKey, Output: d.OutputSchema.ArtifactKey})
			cs = append(cs, capability.CompatClaim{Version: caller.Version, Input: string(r.Input.Verdict), Output: string(r.Output.Verdict)})
		}
		capability.SortClaims(cs)
		out[i] = cs
	}
	return out
}

func oldCovered(d capability.Descriptor, v capability.Version) bool {
	for _, r := range d.SupportedRanges {
		if r.Contains(v) {
			return true
		}
	}
	return false
}

func oldAnnotate(descs []capability.Descriptor, src *Source) ([]capability.Descriptor, error) {
	claims := oldDeriveClaims(descs, src)
	out := make([]capability.Descriptor, len(descs))
	for i, d := range descs {
		if why := policyProblem(d, claims[i]); why != "" {
			return nil, amp.Named(0, ErrClaimUnproven, "%s: %s", d.ID().String(), why)
		}
		if err := oldCheckDescriptorBridge(descs, d, src); err != nil {
			return nil, err
		}
		d.CompatClaims = claims[i]
		out[i] = d
	}
	return out, nil
}

func oldVerifyClaims(descs []capability.Descriptor, src *Source) error {
	claims := oldDeriveClaims(descs, src)
	for i, d := range descs {
		if d.Policy == "" && d.CompatClaims == nil {
			continue
		}
		if !noMorePermissive(d.CompatClaims, claims[i]) {
			return amp.Named(0, ErrFalseClaim, "%s: the signed compatibility claims claim more than the verdicts derived from the bundle's schemas", d.ID().String())
		}
		for _, cs := range [][]capability.CompatClaim{d.CompatClaims, claims[i]} {
			if why := policyProblem(d, cs); why != "" {
				return amp.Named(0, ErrFalseClaim, "%s: %s", d.ID().String(), why)
			}
		}
		if err := oldCheckDescriptorBridge(descs, d, src); err != nil {
			return err
		}
	}
	return nil
}

func oldCheckDescriptorBridge(descs []capability.Descriptor, d capability.Descriptor, src *Source) error {
	if d.Bridge == nil {
		return nil
	}
	id := d.ID().String()
	data, err := src.s.l.Load(d.Bridge.ArtifactKey)
	if err != nil || !d.Bridge.Matches(data) {
		return amp.Named(0, ErrBridgeMalformed, "%s: the bridge artifact is missing or does not match its hash", id)
	}
	b, err := ParseBridge(data)
	if err != nil {
		return amp.Named(0, ErrBridgeMalformed, "%s: %s", id, amp.SafeMessage(err))
	}
	in := Schema{Loader: src.s.l, Key: d.InputSchema.ArtifactKey}
	checked := false
	for _, caller := range descs {
		if caller.Name != d.Name || caller.Version == d.Version || !oldCovered(d, caller.Version) {
			continue
		}
		checked = true
		if err := CheckBridge(b, in, Schema{Loader: src.s.l, Key: caller.OutputSchema.ArtifactKey}); err != nil {
			return amp.Named(0, ErrBridgeDropsRequired, "%s (for callers of %s): %s", id, caller.Version.String(), amp.SafeMessage(err))
		}
	}
	if !checked {
		return CheckBridge(&Bridge{Input: b.Input}, in, Schema{})
	}
	return nil
}

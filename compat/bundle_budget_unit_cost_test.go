package compat

import (
	"fmt"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/capability"
)

// budgetShape is one pair of schemas whose check spends a bundle's
// budget: honest, or hostile and run to a check's bounds.
type budgetShape struct {
	name     string
	l        memLoader
	producer string
	acceptor string
}

// budgetShapes are the checks BenchmarkBundleBudgetUnitCost times: the
// honest translate pair of hundredVersions, and one hostile shape a
// kind of work, each run to a check's bound.
func budgetShapes() []budgetShape {
	l, _ := hundredVersions()
	dir := func(k int) string { return fmt.Sprintf("capabilities/org.example.translate/1.%d.0/", k) }
	uneval := func(i int) string {
		return fmt.Sprintf(`{"properties":{"p%05d":{}},"unevaluatedProperties":false,"anyOf":[{}]}`, i)
	}
	return []budgetShape{
		{"honest pair", l, dir(10) + "input.schema.json", dir(11) + "input.schema.json"},
		{"names", manyPartsSchema(2500, oneProperty, ""), "s.json", "s.json"},
		{"own schemas", manyPartsSchema(200, uneval, ""), "s.json", "s.json"},
		{"not", manyPartsSchema(2500, negated, ""), "s.json", "s.json"},
		{"flatten", sharedConjunction(4000, 100), "s.json", "s.json"},
		{"failing pair at many paths", dagPair(17, 1), "a.json", "b.json"},
		{"union split", splitUnionPair(2000, 99, false), "p.json", "a.json"},
		{"wide schema", memLoader{files: map[string][]byte{
			"a.json": wideMembersSchema(60000, 2000, "a"),
			"b.json": wideMembersSchema(60000, 2000, "b"),
		}}, "a.json", "b.json"},
		{"$id parts", memLoader{files: map[string][]byte{
			"a.json": []byte(idPartsSchema(1000, 200, 1000, "a")),
			"b.json": []byte(idPartsSchema(1000, 200, 1000, "b")),
		}}, "a.json", "b.json"},
	}
}

// BenchmarkBundleBudgetUnitCost times a check of each budgetShapes
// shape, its documents parsed first, and reports what a unit of a
// bundle's budget costs in CPU time ("cpu-ns/unit": the process's CPU
// time over the steps and value work the check takes from the budget,
// MaxBundleSteps, the collector's included; on a shared machine it moves
// far less than wall-clock time), and the primitive it is compared
// with, decoding the 300 schema documents of hundredVersions ("decode",
// "cpu-ns/op"), in the same run.
func BenchmarkBundleBudgetUnitCost(b *testing.B) {
	for _, s := range budgetShapes() {
		x, y := NewSource(s.l), NewSource(s.l)
		x.s.load(s.producer)
		y.s.load(s.acceptor)
		b.Run(s.name, func(b *testing.B) {
			units := 0
			cpu0, ok := processCPU()
			for b.Loop() {
				units += budgetSpent(x, y, s.producer, s.acceptor)
			}
			if cpu1, _ := processCPU(); ok {
				b.ReportMetric(float64((cpu1-cpu0).Nanoseconds())/float64(max(units, 1)), "cpu-ns/unit")
			}
			b.ReportMetric(float64(units)/float64(b.N), "units/op")
		})
	}
	b.Run("decode", func(b *testing.B) {
		l, _ := hundredVersions()
		cpu0, ok := processCPU()
		for b.Loop() {
			for _, v := range l.files {
				if _, err := parseJSON(v); err != nil {
					b.Fatal(err)
				}
			}
		}
		if cpu1, _ := processCPU(); ok {
			b.ReportMetric(float64((cpu1-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
		}
	})
}

// budgetSpent runs the check of producer (in x) against acceptor (in y)
// from a shared budget, as a bundle's claims do, and returns what it
// took from it.
func budgetSpent(x, y *Source, producer, acceptor string) int {
	budget := maxInt
	subsumes(x, producer, y, acceptor, &budget, nil)
	return maxInt - budget
}

// TestBundleOfChecksRunToTheirBoundsIsRefusedWithinSeconds: a bundle's
// claims shared a budget of 10,000,000 units (MaxBundleSteps), each unit
// a comparison step or a unit of value work, and a unit costs up to
// about 4.5 µs of CPU here whatever its kind (name lookups the dearest,
// BenchmarkBundleBudgetUnitCost): a publisher's bundle of claims whose
// checks run to their bounds cost an importer and a builder about 45 s
// before the refusal (fifty checks at MaxValueWork). The budget is now
// 1,000,000 units, a few seconds: four versions of a capability whose
// schemas each run a check to its work bound (twelve pairs, 2.4 million
// units, accepted before) are refused (ErrClaimsTooCostly) after at
// most MaxBundleSteps and one check's bounds.
func TestBundleOfChecksRunToTheirBoundsIsRefusedWithinSeconds(t *testing.T) {
	files := map[string][]byte{}
	all, err := capability.ParseRange(">=1.0.0 <2.0.0")
	if err != nil {
		t.Fatal(err)
	}
	descs := make([]capability.Descriptor, 4)
	for i := range descs {
		v, err := capability.ParseVersion(fmt.Sprintf("1.%d.0", i))
		if err != nil {
			t.Fatal(err)
		}
		key := fmt.Sprintf("s%d.json", i)
		files[key] = wideMembersSchema(20000, 400, fmt.Sprintf("v%d", i))
		descs[i] = capability.Descriptor{Name: "org.example.wide", Version: v, Policy: capability.PolicyRange,
			SupportedRanges: []capability.Range{all},
			InputSchema:     capability.SchemaRef{ArtifactKey: key}, OutputSchema: capability.SchemaRef{ArtifactKey: key}}
	}
	src := NewSource(memLoader{files: files})
	if units := budgetSpent(src, src, "s0.json", "s1.json"); units < MaxValueWork {
		t.Fatalf("one check takes %d units, not its work bound (%d): not a witness", units, MaxValueWork)
	}
	for i, cs := range DeriveClaims(descs, src) {
		descs[i].CompatClaims = cs
	}
	ix := newCoverIndex(descs)
	err = verifyClaims(ix, NewSource(src.s.l))
	if amp.NameOf(err) != ErrClaimsTooCostly {
		t.Fatalf("%v, want %s: twelve checks at their work bound (%d units) fit the bundle's budget of %d",
			err, ErrClaimsTooCostly, 12*MaxValueWork, MaxBundleSteps)
	}
	if spent := MaxBundleSteps - ix.budget; spent > MaxBundleSteps+MaxSteps+MaxValueWork {
		t.Errorf("%d units spent before the refusal, want at most %d", spent, MaxBundleSteps+MaxSteps+MaxValueWork)
	}
}

package compat

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/capability"
)

// claimFloodBundle is n descriptors of one capability, each with its own
// input and output schema (an object of width properties, distinct per
// version, so that no two comparisons are of one pair of schemas), a
// range policy covering every other version, and the claims DeriveClaims
// gives them signed.
func claimFloodBundle(t *testing.T, n, width int) ([]capability.Descriptor, *Source) {
	t.Helper()
	files := map[string][]byte{}
	descs := make([]capability.Descriptor, n)
	all, err := capability.ParseRange(">=1.0.0 <2.0.0")
	if err != nil {
		t.Fatal(err)
	}
	for i := range descs {
		v, err := capability.ParseVersion(fmt.Sprintf("1.%d.0", i))
		if err != nil {
			t.Fatal(err)
		}
		var props []string
		for k := range width {
			props = append(props, fmt.Sprintf(`"p%d":{"type":"string","description":"v%d"}`, k, i))
		}
		doc := []byte(`{"type":"object","properties":{` + strings.Join(props, ",") + `}}`)
		in, out := fmt.Sprintf("in%d.json", i), fmt.Sprintf("out%d.json", i)
		files[in], files[out] = doc, doc
		descs[i] = capability.Descriptor{Name: "org.example.claims", Version: v, Policy: capability.PolicyRange,
			SupportedRanges: []capability.Range{all},
			InputSchema:     capability.SchemaRef{ArtifactKey: in}, OutputSchema: capability.SchemaRef{ArtifactKey: out}}
	}
	src := NewSource(memLoader{files: files})
	for i, cs := range DeriveClaims(descs, src) {
		descs[i].CompatClaims = cs
	}
	return descs, src
}

// TestBundleClaimComparisonsShareOneBudget: a publisher trusted for one
// namespace signs 10,000 descriptors with 256 claims each, and the
// importer re-derives every claim: 2.56 million schema comparisons, each
// bounded by MaxSteps alone, so an import cost hours with no bound across
// them (COMPAT-11, left open). The comparisons of one bundle now share
// MaxBundleSteps; past it VerifyClaims (import) and Annotate (build)
// refuse the bundle whole with ErrClaimsTooCostly, rather than calling
// its honest claims false. Here the budget is lowered so that a small
// bundle passes it: the refusal comes, and comes once the budget is
// spent (the steps spent stay within it and one check's MaxSteps).
func TestBundleClaimComparisonsShareOneBudget(t *testing.T) {
	descs, src := claimFloodBundle(t, 24, 40)
	if err := VerifyClaims(descs, src); err != nil {
		t.Fatalf("the bundle's own derived claims are refused under the default budget: %v", err)
	}
	const maxBundleSteps = 20_000
	ix := newCoverIndex(descs)
	ix.budget = maxBundleSteps
	for _, d := range descs {
		ix.claims(d, ix.cover(d).callers(), NewSource(src.s.l))
		if ix.spent() {
			break
		}
	}
	if !ix.spent() {
		t.Fatalf("the bundle's comparisons spent %d steps, not past the lowered budget of %d: not a witness", maxBundleSteps-ix.budget, maxBundleSteps)
	}
	if spentSteps := maxBundleSteps - ix.budget; spentSteps > maxBundleSteps+MaxSteps {
		t.Fatalf("%d steps spent for a budget of %d", spentSteps, maxBundleSteps)
	}
	for name, err := range map[string]error{
		"VerifyClaims": func() error {
			ix := newCoverIndex(descs)
			ix.budget = maxBundleSteps
			return verifyClaims(ix, NewSource(src.s.l))
		}(),
		"Annotate": func() error {
			ix := newCoverIndex(descs)
			ix.budget = maxBundleSteps
			_, err := annotate(ix, NewSource(src.s.l))
			return err
		}(),
	} {
		var named *amp.Error
		if !errors.As(err, &named) || amp.NameOf(err) != ErrClaimsTooCostly {
			t.Errorf("%s: %v, want %s", name, err, ErrClaimsTooCostly)
		}
	}
}

// TestBundleClaimsCompareOnePairOfSchemasOnce: versions that share their
// schemas (the common case: a patch release keeps them) cost the bundle's
// budget one comparison per pair of schema keys, not one per claim.
func TestBundleClaimsCompareOnePairOfSchemasOnce(t *testing.T) {
	descs, src := claimFloodBundle(t, 2, 40)
	ix := newCoverIndex(descs)
	ix.claims(descs[1], ix.cover(descs[1]).callers(), src)
	one := MaxBundleSteps - ix.budget
	if one <= 0 {
		t.Fatal("no steps counted")
	}
	var shared []capability.Descriptor
	for i := range 200 {
		d := descs[i%2]
		v, _ := capability.ParseVersion(fmt.Sprintf("1.%d.0", i))
		d.Version = v
		shared = append(shared, d)
	}
	ix = newCoverIndex(shared)
	for _, d := range shared {
		ix.claims(d, ix.cover(d).callers(), src)
	}
	if got := MaxBundleSteps - ix.budget; got > 4*one {
		t.Fatalf("200 versions over two pairs of schemas spent %d steps, one comparison %d", got, one)
	}
}

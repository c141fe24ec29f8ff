package compat

import (
	"crypto/sha256"
	"fmt"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/capability"
)

// bridgedDescs returns n descriptors of one capability under policy
// bridge, each with its own version, whose supported_ranges cover no
// carried version (so no schema comparison and no claim), all sharing
// in.json, out.json and the bridge at bridge.json: the bundle
// checkDescriptorBridge re-checks n times at import and at build.
func bridgedDescs(t *testing.T, n int, bridge string) []capability.Descriptor {
	t.Helper()
	sum := sha256.Sum256([]byte(bridge))
	r, err := capability.ParseRange("=9.9.9")
	if err != nil {
		t.Fatal(err)
	}
	descs := make([]capability.Descriptor, 0, n)
	for i := 0; i < n; i++ {
		v, err := capability.ParseVersion(fmt.Sprintf("1.%d.0", i))
		if err != nil {
			t.Fatal(err)
		}
		descs = append(descs, capability.Descriptor{Name: "org.example.bridged", Version: v,
			InputSchema:  capability.SchemaRef{ArtifactKey: "in.json"},
			OutputSchema: capability.SchemaRef{ArtifactKey: "out.json"},
			Policy:       capability.PolicyBridge, SupportedRanges: []capability.Range{r},
			Bridge: &capability.SchemaRef{ArtifactKey: "bridge.json", HashAlg: capability.HashSHA256, Hash: sum[:]}})
	}
	return descs
}

// dropBridge is a bridge whose input side drops the optional member /zz
// ops times.
func dropBridge(ops int) string {
	list := make([]string, ops)
	for i := range list {
		list[i] = `{"op":"drop-optional","path":"/zz"}`
	}
	return `{"bridge":1,"input":[` + strings.Join(list, ",") + `],"output":[]}`
}

// requiredSchema is an object schema requiring names distinct members,
// none of them "zz".
func requiredSchema(names int) string {
	var b strings.Builder
	b.WriteString(`{"type":"object","required":[`)
	for i := 0; i < names; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"m%d"`, i)
	}
	b.WriteString(`]}`)
	return b.String()
}

// TestBridgeSharedByManyDescriptorsIsParsedOncePerImport: the re-check
// of each bridged descriptor (checkDescriptorBridge) loaded, hashed and
// parsed its bridge artifact again, charged to nothing. A bundle of
// bundle.MaxCapabilities (10,000) small descriptors sharing one bridge
// of MaxBridgeSize bytes (64 operations with long default values) made
// an import or a build parse 640 MB of JSON, 13 to 21 ms a descriptor
// here, 2 to 3.5 minutes. Want: one load (and parse) of the artifact
// per Source, however many descriptors name it with the same hash.
func TestBridgeSharedByManyDescriptorsIsParsedOncePerImport(t *testing.T) {
	const n = 1000
	bridge := dropBridge(4)
	l := &keyCountingLoader{memLoader: memLoader{files: map[string][]byte{
		"in.json":     []byte(requiredSchema(3)),
		"out.json":    []byte(`{}`),
		"bridge.json": []byte(bridge),
	}}, loads: map[string]int{}}
	descs := bridgedDescs(t, n, bridge)
	for _, tc := range []struct {
		name string
		run  func(src *Source) error
	}{
		{"import (VerifyClaims)", func(src *Source) error { return VerifyClaims(descs, src) }},
		{"build (Annotate)", func(src *Source) error { _, err := Annotate(descs, src); return err }},
	} {
		clear(l.loads)
		if err := tc.run(NewSource(l)); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := l.loads["bridge.json"]; got != 1 {
			t.Errorf("%s: the bridge shared by %d descriptors was loaded and parsed %d times, want once", tc.name, n, got)
		}
	}
}

// TestBridgeRemovalsAgainstALongRequiredListAreChargedToTheBundle: the
// bridge re-check's walk (requiredAt) compares every removal of a side
// with every entry of the target schema's "required" list, and nothing
// of it was charged to the bundle's budget (MaxBundleSteps): a bundle of
// bundle.MaxCapabilities descriptors under policy bridge covering no
// carried version (no claim, no comparison), sharing one input schema of
// MaxDocumentSize requiring 400,000 names and a bridge of 64 removals of
// a member it does not list, cost 25.6 million comparisons a descriptor,
// 0.15 s each here, about 25 minutes of an import or a build.
//
// Want: each schema object and each "required" entry a walk visits is
// a visit, valuesPerStep visits a unit of the bundle's budget, counted
// over the bundle; past it the bundle is refused whole,
// compatibility_claims_too_costly, with no more than one visit past the
// budget. An honest bundle's walks cost their visits and stay accepted.
func TestBridgeRemovalsAgainstALongRequiredListAreChargedToTheBundle(t *testing.T) {
	const maxBundleSteps = 20_000
	for _, tc := range []struct {
		name       string
		descs, ops int
		required   int
		want       amp.ErrName
		wantUnits  int // units charged (when accepted)
	}{
		// 1,000 descriptors × 4 removals × (the root + 3 entries):
		// 16,000 visits, 250 units.
		{name: "honest: short required list", descs: 1000, ops: 4, required: 3,
			wantUnits: 16_000 / valuesPerStep},
		// 40 descriptors × 64 removals × 20,001 visits: 800 units a
		// descriptor, 51.2 million visits in all.
		{name: "hostile: long required list", descs: 40, ops: MaxBridgeOps, required: 20_000,
			want: ErrClaimsTooCostly},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bridge := dropBridge(tc.ops)
			l := memLoader{files: map[string][]byte{
				"in.json":     []byte(requiredSchema(tc.required)),
				"out.json":    []byte(`{}`),
				"bridge.json": []byte(bridge),
			}}
			descs := bridgedDescs(t, tc.descs, bridge)
			ix := newCoverIndex(descs)
			ix.budget = maxBundleSteps
			err := verifyClaims(ix, NewSource(l))
			if got := amp.NameOf(err); got != tc.want {
				t.Fatalf("VerifyClaims: error %q (%v), want %q", got, err, tc.want)
			}
			ax := newCoverIndex(descs)
			ax.budget = maxBundleSteps
			_, err = annotate(ax, NewSource(l))
			if got := amp.NameOf(err); got != tc.want {
				t.Fatalf("Annotate: error %q (%v), want %q", got, err, tc.want)
			}
			if tc.want == "" {
				if units := maxBundleSteps - ix.budget; units != tc.wantUnits {
					t.Fatalf("the walks charged %d units of the bundle's budget, want %d", units, tc.wantUnits)
				}
				return
			}
			// Refused at the budget: the walks stop a visit past it.
			if units := maxBundleSteps - ix.budget; units != maxBundleSteps+1 {
				t.Fatalf("the walks charged %d units, want the budget's %d and one", units, maxBundleSteps)
			}
		})
	}
}

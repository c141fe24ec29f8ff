package resolver

import (
	"fmt"
	"testing"
)

// TestImportClaimingATypeOfManyOwnersCostsWhatItClaims: an import that
// claims a legacy type for which another authority's claim is held by
// many bundles (each carrying a version of one capability) read every
// owner's installed record, its signed manifest copied, twice per
// import (before staging and at commit), though a claim of another
// namespace conflicts only when the importer's signers all speak for
// it, whoever owns it: each owner of 20 capabilities added about 22 KB
// to the import. Owners are now read only for a claim that can conflict
// (SCALE-23); what is left per owner is its name in the alias record.
// The answer is the same: both claims kept (ambiguous).
func TestImportClaimingATypeOfManyOwnersCostsWhatItClaims(t *testing.T) {
	const typ, shared = "Legacy/Shared", "org.example.shared"
	cost := map[int]uint64{}
	for _, n := range []int{25, 100} {
		s := newStore(t)
		for i := range n {
			mustImport(t, s, holdingBundle(t, fmt.Sprintf("org.example.v%03d", i), 1,
				holding{caps: 20, capPrefix: shared, capVersion: fmt.Sprintf("1.0.%d", i), sharedAlias: typ}))
		}
		acme := acmeClaiming(t, map[string]string{typ: "com.acme.geo.geocode"})
		cost[n] = allocatedBy(t, func() error { _, err := importBytes(t, s, acme, ImportOptions{}); return err })
		wantAmbiguous(t, s, typ, "com.acme.geo.geocode", shared+".c00000")
	}
	more := int64(cost[100]) - int64(cost[25])
	if each := more / 75; each > 2048 {
		t.Fatalf("an import claiming a type 100 bundles claim allocated %d bytes, 25 %d: %d bytes more for each owner", cost[100], cost[25], each)
	}
}

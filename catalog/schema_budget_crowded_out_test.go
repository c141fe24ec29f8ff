package catalog

import (
	"strings"
	"testing"
)

// TestBundleSchemasOverItsShareCrowdOutNoOther: the schema text a model
// kept had no bound in all: near the 1 GiB bundle limit, a model held
// ~1 GiB of one publisher's schemas (twice while a refresh read the
// next). Each bundle now has an equal share of MaxCatalogSchemaBytes:
// one publisher's many schemas spend only its own share, the schemas
// past it are kept as over_schema_budget (unparsed, their page saying
// so), and another bundle's schemas are kept whole.
//
// Amended (CATALOG-46): org.hostile keeps 3, not 2. It is read last (the
// most demand) and its share is what the sample and org.many left
// (~484 KiB), not a third of the budget; and each of its schemas is
// charged its $ref entries too (~132 KiB, not the 100 KiB of text).
func TestBundleSchemasOverItsShareCrowdOutNoOther(t *testing.T) {
	// Three bundles: the translate sample, org.hostile and org.many.
	p := newStore(t, schemasBundle(t, "org.hostile", 6, 100<<10), schemasBundle(t, "org.many", 2, 100<<10))
	const budget = 3 * 250 << 10
	m := readStore(t, p, func(o *ReadOptions) { o.MaxCatalogSchemaBytes = budget })
	kept, over, total := map[string]int{}, map[string]int{}, 0
	for loc, s := range m.schemas {
		total += schemaCost(s)
		switch {
		case s.Err == string(ErrOverSchemaBudget):
			over[loc.BundleID]++
			if len(s.Text) != 0 || len(s.refs) != 0 || s.ID != "" {
				t.Errorf("%v: a schema over the budget keeps what was derived of it", loc)
			}
		case s.Err == "":
			kept[loc.BundleID]++
		}
	}
	if total > budget {
		t.Errorf("the model keeps %d bytes of schemas, over the budget of %d", total, budget)
	}
	for _, c := range []struct {
		bundle     string
		kept, over int
	}{{"org.hostile", 3, 3}, {"org.many", 2, 0}} {
		if kept[c.bundle] != c.kept || over[c.bundle] != c.over {
			t.Errorf("%s: %d schemas kept and %d over the budget, want %d and %d", c.bundle, kept[c.bundle], over[c.bundle], c.kept, c.over)
		}
	}
	sample := ""
	for id := range kept {
		if strings.HasPrefix(id, "org.example") {
			sample = id
		}
	}
	if sample == "" || over[sample] != 0 {
		t.Errorf("the sample bundle's schemas were crowded out: %d over", over[sample])
	}
}

// TestSchemaOverTheBudgetIsShownAsNotShown: a schema past its bundle's
// share is not dropped silently: its page says it is not shown, over the
// catalog's schema budget.
func TestSchemaOverTheBudgetIsShownAsNotShown(t *testing.T) {
	m := &Model{schemas: map[SchemaLoc]Schema{}}
	s := Schema{Loc: SchemaLoc{BundleID: "org.hostile", Key: "s5.json"}, Err: string(ErrOverSchemaBudget)}
	var b strings.Builder
	h := newHandler(t, newStore(t))
	v := m.schemaView(t.Context(), s, "s")
	if err := h.pages["schema"].ExecuteTemplate(&b, "schema", v); err != nil {
		t.Fatal(err)
	}
	if got := b.String(); !strings.Contains(got, "Not shown: over the catalog's schema budget") || strings.Contains(got, "cannot be read") {
		t.Errorf("the page of a schema over the budget says %q", got)
	}
}

// TestTruncatedSchemaHoldsOnlyWhatItShows: a schema longer than
// MaxSchemaBytes (up to the 4 MiB a compile takes) was kept as a slice
// of the bytes read, holding all of them for the 256 KiB shown.
func TestTruncatedSchemaHoldsOnlyWhatItShows(t *testing.T) {
	doc := `{"type":"object","description":"` + strings.Repeat("x", 1<<20) + `"}`
	m := readStore(t, newStore(t, deepBundle(t, []byte(doc))), nil)
	s, ok := m.Schema(SchemaLoc{BundleID: "org.hostile", Key: "deep.json"})
	if !ok || !s.Truncated {
		t.Fatalf("the schema of 1 MiB is not kept truncated")
	}
	if cap(s.Text) > DefaultMaxSchemaBytes {
		t.Errorf("the truncated schema holds %d bytes for the %d it shows", cap(s.Text), len(s.Text))
	}
}

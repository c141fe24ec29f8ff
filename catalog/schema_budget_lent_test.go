package catalog

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/capability"
)

// docsBundle signs a bundle id (one under a scope the hostile key is
// trusted for) with a capability per document, each taking and giving
// it.
func docsBundle(t testing.TB, id string, docs ...[]byte) []byte {
	t.Helper()
	v, _ := capability.ParseVersion("1.0.0")
	d := &bundle.Draft{BundleID: id, Version: 1, CreatedAt: testNow.Add(-time.Hour)}
	for i, doc := range docs {
		key := fmt.Sprintf("d%d.json", i)
		d.Artifacts = append(d.Artifacts, bundle.BytesSource(key, bundle.MediaTypeSchema, doc))
		d.Capabilities = append(d.Capabilities, capability.Descriptor{Name: fmt.Sprintf("%s.cap%d", id, i), Version: v,
			InputSchema: capability.SchemaRef{ArtifactKey: key}, OutputSchema: capability.SchemaRef{ArtifactKey: key}})
	}
	var file bytes.Buffer
	if _, err := bundle.Write(&file, d, []ed25519.PrivateKey{hostileKey}, bundle.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	return file.Bytes()
}

// schemaTally is what a model kept of the schemas: by bundle, the
// schemas kept and over the budget and what the kept ones cost; and
// what they cost in all.
type schemaTally struct {
	kept, over, cost map[string]int
	total            int
}

func tallySchemas(m *Model) schemaTally {
	c := schemaTally{kept: map[string]int{}, over: map[string]int{}, cost: map[string]int{}}
	for loc, s := range m.schemas {
		switch s.Err {
		case string(ErrOverSchemaBudget):
			c.over[loc.BundleID]++
		case "":
			c.kept[loc.BundleID]++
			c.cost[loc.BundleID] += schemaCost(s)
			c.total += schemaCost(s)
		}
	}
	return c
}

// TestUnusedSchemaSharesAreLent: each bundle had an equal share of the
// schema budget and no share was lent, so with 300 bundles a bundle of
// 40 capabilities with 16 KiB schemas (~1.28 MiB, over the ~874 KiB
// share) lost pages while most of the 256 MiB sat unused, and
// installing an unrelated bundle shrank every share. Scaled down: a
// bundle of eight 16 KiB schemas (~170 KB with their entries) beside the
// sample and two, then ten, small bundles, a budget of 400 KiB (an equal
// share of 100 KiB, then ~33 KiB): the large bundle now takes what the
// small ones leave and keeps every schema, however many small ones are
// installed. Before: it kept 4, then 1, of its 8.
func TestUnusedSchemaSharesAreLent(t *testing.T) {
	const budget = 400 << 10
	for _, small := range []int{2, 10} {
		files := [][]byte{schemasBundle(t, "org.many.large", 8, 16<<10)}
		for i := range small {
			files = append(files, schemasBundle(t, fmt.Sprintf("org.many.small%d", i), 1, 1<<10))
		}
		m := readStore(t, newStore(t, files...), func(o *ReadOptions) { o.MaxCatalogSchemaBytes = budget })
		c := tallySchemas(m)
		if len(c.over) != 0 || c.kept["org.many.large"] != 8 {
			t.Errorf("%d small bundles: schemas over the budget %v, the large bundle keeps %d of 8", small, c.over, c.kept["org.many.large"])
		} else if n := small + 2; c.cost["org.many.large"] <= budget/n {
			t.Errorf("%d small bundles: the large bundle's schemas cost %d, within an equal share (%d): the test shows nothing", small, c.cost["org.many.large"], budget/n)
		}
		if c.total > budget {
			t.Errorf("%d small bundles: the model keeps %d bytes of schemas, over the budget of %d", small, c.total, budget)
		}
	}
}

// refsDoc is a schema of about 27 KB whose 1,000 $refs are resolved
// against a 2,000-character $id: its entries cost about 2 MB, 75 times
// its size, which its manifest does not tell.
func refsDoc() []byte {
	var b strings.Builder
	fmt.Fprintf(&b, `{"$id":"https://example.org/%s.json","properties":{`, strings.Repeat("i", 2000))
	for i := range 1000 {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"p%d":{"$ref":"#/$defs/x"}`, i)
	}
	b.WriteString(`},"$defs":{"x":{}}}`)
	return []byte(b.String())
}

// TestHostileBundleCrowdsOutNoBundleOfLessDemand: with shares lent, a
// bundle whose demand is under the equal share still keeps all of it,
// whatever the others hold: one that asks for the whole budget (org.hostile,
// six 100 KiB schemas) and one whose entries cost far more than its
// manifest tells (org.hostile.refs, read early as if small). And a
// schema is charged its entries too: the check counted its text alone,
// so a bundle passed its share by a schema's entries, and refsDoc (its
// text well within a share, its entries 2 MB) would have been kept.
func TestHostileBundleCrowdsOutNoBundleOfLessDemand(t *testing.T) {
	const budget = 6 * 100 << 10
	p := newStore(t, schemasBundle(t, "org.hostile", 6, 100<<10), docsBundle(t, "org.hostile.refs", refsDoc()),
		schemasBundle(t, "org.many.a", 2, 20<<10), schemasBundle(t, "org.many.b", 1, 40<<10))
	m := readStore(t, p, func(o *ReadOptions) { o.MaxCatalogSchemaBytes = budget })
	c := tallySchemas(m)
	if c.total > budget {
		t.Errorf("the model keeps %d bytes of schemas, over the budget of %d", c.total, budget)
	}
	for id, spent := range m.schemaSpent {
		if spent > m.schemaShare[id] || spent != c.cost[id] {
			t.Errorf("%s: spent %d (its kept schemas cost %d), its share %d", id, spent, c.cost[id], m.schemaShare[id])
		}
	}
	equal := budget / len(m.Bundles)
	for _, id := range []string{"org.many.a", "org.many.b", "org.example.translate"} {
		if c.over[id] != 0 || c.cost[id] > equal {
			t.Errorf("%s: %d schemas over the budget, %d kept costing %d (an equal share: %d)", id, c.over[id], c.kept[id], c.cost[id], equal)
		}
	}
	if c.over["org.hostile"] == 0 || c.kept["org.hostile"] == 0 {
		t.Errorf("org.hostile: %d kept and %d over the budget, want some of each", c.kept["org.hostile"], c.over["org.hostile"])
	}
	if s := m.schemas[SchemaLoc{BundleID: "org.hostile.refs", Key: "d0.json"}]; s.Err != string(ErrOverSchemaBudget) || len(refsDoc()) > equal {
		t.Errorf("a schema whose entries pass its share is kept as %q (its text %d bytes, an equal share %d)", s.Err, len(refsDoc()), equal)
	}
	if _, ok := m.derived[sha256.Sum256(refsDoc())]; ok {
		t.Errorf("what was derived of a schema over the budget is kept for the next read")
	}
}

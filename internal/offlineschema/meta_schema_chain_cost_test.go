package offlineschema

import (
	"fmt"
	"testing"
	"time"
)

// metaChainFiles builds a bundle of n one-object documents: the root
// "$ref"s the last, and document k "$ref"s document k-1, so the library
// loads them last first. With chained, document k names document k+1 as
// its "$schema" (the last names 2020-12): each document loaded names as
// meta-schema the one loaded just before it. Without, every document
// names 2020-12 itself: the same loads and compiles for the library, no
// chain. The root declares one "$anchor".
func metaChainFiles(n int, chained bool) map[string]string {
	files := map[string]string{}
	for k := range n {
		meta := "https://json-schema.org/draft/2020-12/schema"
		if chained && k+1 < n {
			meta = fmt.Sprintf("ampbundle:///m%05d.json", k+1)
		}
		ref := ""
		if k > 0 {
			ref = fmt.Sprintf(`, "$ref": "m%05d.json"`, k-1)
		}
		files[fmt.Sprintf("m%05d.json", k)] = fmt.Sprintf(`{"$schema": %q%s}`, meta, ref)
	}
	files["s.json"] = fmt.Sprintf(`{"$anchor": "a", "$ref": "m%05d.json"}`, n-1)
	return files
}

// Attack: a "$schema" chain of many hops, loaded tail first
// (metaChainFiles): 9,901 documents of one object each, 600 KB, within
// every compile limit. Each document the library loads names as
// meta-schema the one loaded just before, whose draft it already knows:
// the library does constant work per document. Compile does not: at each
// load session.metaLoop (anchors.go) walks the whole chain from the new
// document's meta-schema to its end, and, since the root declares an
// anchor, checkAnchors walks it again for every document through
// session.draftOf, neither remembering what it found: n²/2 hops each.
// Before the fix: about 11 s against 1.2 s for the same documents each
// naming 2020-12 (two thirds of the time in metaLoop and draftOf; a few
// such schemas in one bundle hold an importer for a minute). It costs
// about the same now: each loaded document's chain end (metaEnd) and
// draft (metaDraft) is remembered once, as the library does
// (docs/SPEC-DECISIONS.md, SCHEMA-7). Should: the steps metaEnd and
// metaDraft take along the chain (session.metaHops) stay linear in it, at most 8
// a document (n²/2 before); the times of the chain and of its twin naming
// 2020-12 are logged.
func TestMetaSchemaChainCostsQuadraticInTheScan(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles 9,900 documents twice")
	}
	const n = 9900
	run := func(chained bool) (time.Duration, int64) {
		files := metaChainFiles(n, chained)
		sess := newSession(newLoader(files), Options{})
		start := time.Now()
		if _, err := sess.compile("s.json"); err != nil {
			t.Fatalf("chained=%v: %v", chained, err)
		}
		return time.Since(start), int64(sess.metaHops)
	}
	flat, flatHops := run(false)
	chain, chainHops := run(true)
	t.Logf("flat %v (%d chain steps), chained %v (%d chain steps)", flat, flatHops, chain, chainHops)
	if chainHops > 8*n {
		t.Fatalf("a meta-schema chain of %d documents took %d steps along the chain to compile, want at most %d: the scan is quadratic in the chain", n, chainHops, 8*n)
	}
}

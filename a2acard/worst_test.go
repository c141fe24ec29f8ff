package a2acard

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/internal/jcs"
	"github.com/ampbundle/ampbundle/internal/testalloc"
)

// worstFill is a hostile value that fills a card up to about n bytes.
type worstFill struct {
	name string
	fill func(n int) string
}

// worstFills are the shapes that cost a canonicalizer most per input byte:
// many tiny numbers (one tree node each), long strings of escapes and of
// non-ASCII (each rewritten), wide objects whose names sort by UTF-16 code
// units (surrogate pairs against BMP characters above them), nesting to
// jcs.MaxDepth repeated, subnormal numbers (each rounded three times), and
// many signatures under the verifying kid.
var worstFills = []worstFill{
	// As many values as MaxCardValues leaves, then the bytes left in one
	// string: the card at both bounds at once.
	{"SmallNumbers", func(n int) string {
		k := MaxCardValues - 200
		return "[" + strings.Repeat("0,", k) + `"` + strings.Repeat("a", n-2*k-4) + `"]`
	}},
	{"LongNumbers", func(n int) string {
		const x = "1.7976931348623157e+308,"
		k := min(n/len(x), MaxCardValues-200)
		return "[" + strings.Repeat(x, k) + `"` + strings.Repeat("a", n-len(x)*k-4) + `"]`
	}},
	{"Escapes", func(n int) string { return `"` + strings.Repeat(`\u0001\n`, n/8) + `"` }},
	{"NonASCII", func(n int) string { return `"` + strings.Repeat("é😀\uffff", n/10) + `"` }},
	{"WideObject", func(n int) string {
		var b strings.Builder
		b.WriteString("{")
		for i := 0; b.Len() < n-32 && i < MaxCardValues-200; i++ {
			if i > 0 {
				b.WriteString(",")
			}
			// Names that differ only late, half above the surrogates in
			// UTF-8 order and below them in UTF-16 order.
			pre := "\uffff"
			if i%2 == 1 {
				pre = "😀"
			}
			b.WriteString(`"` + pre + strconv.Itoa(i*7919%1000003) + `":0`)
		}
		b.WriteString(`,"pad":"` + strings.Repeat("a", max(0, n-b.Len()-16)) + `"}`)
		return b.String()
	}},
	{"DeepNesting", func(n int) string {
		one := strings.Repeat(`{"a":[`, jcs.MaxDepth/2-2) + "0" + strings.Repeat("]}", jcs.MaxDepth/2-2)
		k := min(n/(len(one)+1), (MaxCardValues-200)/(jcs.MaxDepth-3))
		return "[" + strings.Repeat(one+",", k) + `"` + strings.Repeat("a", max(0, n-(len(one)+1)*k-4)) + `"]`
	}},
	// Subnormal numbers, canonical as written, which strconv rounds by
	// its slow decimal fallback, a thousand times a plain number
	// (docs/SPEC-DECISIONS.md AGH-20).
	{"SubnormalNumbers", func(n int) string {
		const x = "5e-324,"
		k := min(n/len(x), MaxCardValues-200)
		return "[" + strings.Repeat(x, k) + `"` + strings.Repeat("a", n-len(x)*k-4) + `"]`
	}},
}

// signRaw signs a raw card object (no signatures member) count times
// under the vector key, each signature with its own protected header, and
// returns the card with its signatures appended.
func signRaw(t testing.TB, raw []byte, count int) []byte {
	t.Helper()
	tree, err := jcs.Parse(raw, jcs.MaxDepth)
	if err != nil {
		t.Fatal(err)
	}
	payload, err := payloadOf(tree.(jcs.Object))
	if err != nil {
		t.Fatal(err)
	}
	key := vectorKey()
	kid := DIDKeyID(vectorPub())
	var sigs []Signature
	for i := range count {
		h, _ := json.Marshal(map[string]string{"alg": Alg, "kid": kid, "typ": Typ, "jku": "https://agent.example/jwks/" + strconv.Itoa(i)})
		p := base64.RawURLEncoding.EncodeToString(h)
		sigs = append(sigs, Signature{Protected: p, Signature: base64.RawURLEncoding.EncodeToString(ed25519.Sign(key, signingInput(p, payload)))})
	}
	sj, _ := json.Marshal(sigs)
	out := append(bytes.TrimSuffix(bytes.TrimSpace(raw), []byte("}")), `,"signatures":`...)
	return append(append(out, sj...), '}')
}

// worstCard is the vector card with member "x" holding f's value, signed
// sigs times, within MaxCardBytes.
func worstCard(t testing.TB, f worstFill, sigs int) []byte {
	t.Helper()
	base, err := json.Marshal(vectorCard(t))
	if err != nil {
		t.Fatal(err)
	}
	room := MaxCardBytes - len(base) - 16 - sigs*400
	raw := append(bytes.TrimSuffix(base, []byte("}")), `,"x":`+f.fill(room)+"}"...)
	card := signRaw(t, raw, sigs)
	if len(card) > MaxCardBytes {
		t.Fatalf("%s: %d bytes, over the bound", f.name, len(card))
	}
	if _, err := Verify(card, vectorPub(), ""); err != nil {
		t.Fatalf("%s: %v", f.name, err)
	}
	return card
}

// cost is what one call took: bytes allocated, wall and CPU nanoseconds.
type cost struct {
	bytes   uint64
	ns, cpu int64
}

// verifyCard returns Verify of card under pub, the vector key, failing
// t if card does not verify.
func verifyCard(t testing.TB, card []byte, pub ed25519.PublicKey) func() {
	return func() {
		if _, err := Verify(card, pub, ""); err != nil {
			t.Fatal(err)
		}
	}
}

// verifyCost returns the cost of Verify of card.
func verifyCost(t testing.TB, card []byte) cost {
	return measure(verifyCard(t, card, vectorPub()))
}

// unmarshalCost is verifyCost for json.Unmarshal of card into an any.
func unmarshalCost(card []byte) cost {
	return measure(func() {
		var v any
		_ = json.Unmarshal(card, &v)
	})
}

// measure returns the cost of one run of f (testalloc.Bytes: after
// collections that are not counted), its times and bytes from the same
// run, for the benchmark to report.
func measure(f func()) cost {
	var c cost
	c.bytes = testalloc.Bytes(func() {
		c0, t0 := cpuTime(), time.Now()
		f()
		c.ns, c.cpu = time.Since(t0).Nanoseconds(), cpuTime()-c0
	})
	return c
}

// BenchmarkVerifyWorstCard verifies each worst card at the size bound and
// reports, from the same run, its bytes allocated per input byte
// (alloc/in-byte), its wall and CPU time per MiB (verify-ms/MiB,
// verify-cpu-ms/MiB, for the record: the ratios are the measure), and its
// time and allocation as ratios to a plain json.Unmarshal of the same
// bytes into an any (x_unmarshal-ns, x_unmarshal-B).
func BenchmarkVerifyWorstCard(b *testing.B) {
	for _, f := range worstFills {
		b.Run(f.name, func(b *testing.B) { benchWorst(b, worstCard(b, f, 1)) })
	}
	b.Run("ManySignatures", func(b *testing.B) {
		benchWorst(b, worstCard(b, worstFills[2], MaxSignatures))
	})
}

func benchWorst(b *testing.B, card []byte) {
	b.ResetTimer()
	b.SetBytes(int64(len(card)))
	b.ReportAllocs()
	var v, u cost
	for range b.N {
		vc, uc := verifyCost(b, card), unmarshalCost(card)
		v = cost{v.bytes + vc.bytes, v.ns + vc.ns, v.cpu + vc.cpu}
		u = cost{u.bytes + uc.bytes, u.ns + uc.ns, u.cpu + uc.cpu}
	}
	perMiB := func(ns int64) float64 { return float64(ns) / float64(b.N) / float64(len(card)) * (1 << 20) / 1e6 }
	b.ReportMetric(float64(v.bytes)/float64(b.N)/float64(len(card)), "alloc/in-byte")
	b.ReportMetric(perMiB(v.ns), "verify-ms/MiB")
	b.ReportMetric(perMiB(v.cpu), "verify-cpu-ms/MiB")
	if u.ns > 0 && u.bytes > 0 {
		b.ReportMetric(float64(v.ns)/float64(u.ns), "x_unmarshal-ns")
		b.ReportMetric(float64(v.bytes)/float64(u.bytes), "x_unmarshal-B")
	}
}

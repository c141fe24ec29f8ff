package compat

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/capability"

	"github.com/ampbundle/ampbundle/internal/testalloc"
)

// listedVersions are two versions of org.example.listed whose input and
// output schemas list the same n values (format gives value i), the second
// in the reverse order: every cell between them compares each listed value
// of one list with the other's (listedKeyword: containsValue for each),
// n²/2 value comparisons counted as one step of the checker.
func listedVersions(t *testing.T, n int, format string) []Provided {
	t.Helper()
	up, down := make([]string, n), make([]string, n)
	for i := range n {
		up[i] = fmt.Sprintf(format, i)
		down[n-1-i] = up[i]
	}
	src := NewSource(loaderOf(map[string]json.RawMessage{
		"up.json":   json.RawMessage(`{"enum":[` + strings.Join(up, ",") + `]}`),
		"down.json": json.RawMessage(`{"enum":[` + strings.Join(down, ",") + `]}`),
	}))
	var vs []Provided
	for i, key := range []string{"up.json", "down.json"} {
		v, err := capability.ParseVersion(fmt.Sprintf("%d.0.0", i+1))
		if err != nil {
			t.Fatal(err)
		}
		vs = append(vs, Provided{Src: src, Descriptor: capability.Descriptor{Name: "org.example.listed", Version: v,
			InputSchema: capability.SchemaRef{ArtifactKey: key}, OutputSchema: capability.SchemaRef{ArtifactKey: key}}})
	}
	return vs
}

// TestHostileListedValuesCannotOutlastTheMatrixComparisonBudget: the
// matrix budget (MatrixOf's maxSteps; the catalog's 1,000,000) and each
// check's MaxSteps count calls of subset, but one call may compare every
// listed value of the producer with every listed value of the consumer
// (listedKeyword, addListed, disjoint: containsValue in a loop), and each
// comparison of two numbers not in plain integer form parses both with
// big.Rat.SetString, the exponent expanded (ratOf takes up to 9999; a
// bundle's schema may hold up to 400 by offlineschema's compile limit, a
// 1,330-bit integer a parse). Measured: two 4.4 KB schemas of 500 values
// 1e9999.. take ~10 s for ONE check, two 19 KB ones 4m42s; with 1e400..,
// ~0.4 s a check at 300 values (2.4 KB), so ~17 s at 2,000 and by n² ~45
// min at the catalog's 256 KiB, all within a handful of steps. A signed
// bundle of a few KB thus costs a catalog page (any anonymous peer,
// /ui/compat), an `ampbundle compat`, or an import whose claims are
// re-derived (VerifyClaims, sync included, under the store's write lock)
// minutes to hours of CPU. The checker now compares listed values by
// their canonical forms, read once per document (listedOf), and charges
// its passes over lists to the steps: a matrix held to 1,000 comparisons
// finishes in well under a second.
//
// Should: across the whole matrix each list is read once per document
// (valueReads.listed: at most the 2n values of the two documents' enums) and no
// listed number is read exactly (valueReads.rats: none, where pairwise comparison
// read two a comparison, n² a check). The time is logged (a busy machine
// cannot decide a bound on it; the counts are what the fix changed).
func TestHostileListedValuesCannotOutlastTheMatrixComparisonBudget(t *testing.T) {
	for _, tc := range []struct {
		name   string
		n      int
		format string
	}{
		{"numbers with exponents of 400 (the most a bundle's schema may hold)", 400, `%de400`},
		{"decimal numbers (7 KB a schema)", 900, `%d.5`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vs := listedVersions(t, tc.n, tc.format)
			var counted valueReads
			start := time.Now()
			budget := 1000
			mx := matrixOf(vs, &budget, nil, &counted)
			took := time.Since(start)
			reads, rats := counted.listed, counted.rats
			t.Logf("%d values a list: %d listed values read, %d numbers read exactly, %v (levels %v)", tc.n, reads, rats, took, levels(mx))
			if reads > int64(2*tc.n) {
				t.Errorf("a matrix of two versions listing %d values read %d listed values, want at most %d: each list is read again per comparison, not once per document",
					tc.n, reads, 2*tc.n)
			}
			if rats != 0 {
				t.Errorf("a matrix held to 1000 comparisons of two versions listing %d values read %d numbers exactly (big.Rat), want none (levels %v): "+
					"the budget counts subset calls, not the value comparisons (n² big.Rat parses) inside one", tc.n, rats, levels(mx))
			}
		})
	}
}

func levels(mx Matrix) []string {
	out := make([]string, 0, len(mx.Cells))
	for _, c := range mx.Cells {
		out = append(out, c.Level)
	}
	return out
}

// listedCheck checks two schemas of props properties, each a reference
// to one list of n values (format gives value i; the consumer's in the
// reverse order) with extra keywords, and returns the checker after.
func listedCheck(t *testing.T, props, n int, format, extra string) (*checker, Report, time.Duration) {
	t.Helper()
	up, down := make([]string, n), make([]string, n)
	for i := range n {
		up[i] = fmt.Sprintf(format, i)
		down[n-1-i] = up[i]
	}
	schema := func(list []string) json.RawMessage {
		ps := make([]string, props)
		for j := range ps {
			ps[j] = fmt.Sprintf(`"p%d":{"$ref":"#/$defs/v"}`, j)
		}
		return json.RawMessage(`{"type":"object","properties":{` + strings.Join(ps, ",") + `},` +
			`"$defs":{"v":{"enum":[` + strings.Join(list, ",") + `]` + extra + `}}}`)
	}
	src := NewSource(loaderOf(map[string]json.RawMessage{"up.json": schema(up), "down.json": schema(down)}))
	start := time.Now()
	c := &checker{a: src.s, b: src.s, memo: map[string]int{}, assumed: maxInt}
	r := c.run("up.json", "down.json")
	return c, r, time.Since(start)
}

// TestHostileListedValuesAreChargedToTheCheckSteps: a comparison that
// passes over listed values costs a unit of work (checker.work, bounded by
// MaxValueWork apart from the steps) per valuesPerStep values, and one
// that reads each listed number exactly (here against minimum and
// multipleOf) a unit more per ratBytesPerStep bytes of the number's text
// and exponent: 20 properties meeting lists of 6,400 values cost at least
// 20 × 2 passes × 100 steps, and with the bounds 4 of them 4 × 6,400 × 3 (1e400
// read exactly) more; lists of fewer than valuesPerStep values cost
// nothing more.
func TestHostileListedValuesAreChargedToTheCheckSteps(t *testing.T) {
	for _, tc := range []struct {
		name, format, extra       string
		props, n, atLeast, atMost int
	}{
		{"passes over lists", "%de400", "", 20, 6400, 20 * 2 * 6400 / valuesPerStep, MaxValueWork},
		{"numbers read exactly", "%de400", `,"minimum":0,"multipleOf":1`, 4, 6400, 4 * 6400 * 3, MaxValueWork},
		{"short lists", "%de4", `,"minimum":0`, 20, valuesPerStep - 1, 0, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, r, _ := listedCheck(t, tc.props, tc.n, tc.format, tc.extra)
			if c.work < tc.atLeast || c.work > tc.atMost {
				t.Errorf("%d properties meeting lists of %d values (%s): %d units of work, want %d..%d (%s)",
					tc.props, tc.n, tc.format+tc.extra, c.work, tc.atLeast, tc.atMost, r.Verdict)
			}
		})
	}
}

// TestHostileListedValuesCostNoMoreThanTheCheckStepBound: without a
// matrix budget, a check is bounded by MaxSteps and MaxValueWork alone, so
// its passes over listed values must be charged to that work, or a schema of a few
// hundred KB listing numbers with large exponents, met at every property,
// costs hours. Here 200 properties each meet two lists of 30,000 values
// 0e400.. (each number 4.5 µs to read exactly): the check runs out of
// work (too_complex, unknown, never compatible) within the time of a
// check at its step bound, not after n² comparisons: each list is read
// once per document (checker.reads.listed at most 2n), and the numbers read
// exactly (checker.reads.rats) stay within MaxValueWork and one more list, each costing a
// unit of work; the time is logged.
func TestHostileListedValuesCostNoMoreThanTheCheckStepBound(t *testing.T) {
	if testalloc.Race {
		t.Skip("the race detector makes the checker ten times slower: minutes of checks")
	}
	for _, tc := range []struct {
		name, format, extra string
		n                   int
	}{
		{"lists of numbers with exponents of 400", "%de400", "", 30000},
		{"lists of numbers read exactly against a bound", "%de400", `,"minimum":0,"multipleOf":1`, 5000},
		{"lists of decimals", "%d.5", "", 40000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, r, took := listedCheck(t, 200, tc.n, tc.format, tc.extra)
			reads, rats := c.reads.listed, c.reads.rats
			t.Logf("%d values a list: %d units of work, %d listed values read, %d numbers read exactly, %v", tc.n, c.work, reads, rats, took)
			if c.work <= MaxValueWork || r.Verdict != Unknown || len(r.Findings) == 0 || r.Findings[0].Rule != "too_complex" {
				t.Errorf("200 properties meeting lists of %d values: %d units of work, %s %+v; want the passes over the lists charged past MaxValueWork (too_complex)",
					tc.n, c.work, r.Verdict, r.Findings)
			}
			if reads > int64(2*tc.n) || rats > int64(MaxValueWork+tc.n) {
				t.Errorf("a check bounded by MaxSteps and MaxValueWork read %d listed values and %d numbers exactly, want at most %d and %d: its work over listed values is not bounded",
					reads, rats, 2*tc.n, MaxValueWork+tc.n)
			}
		})
	}
}

// TestListedValuesCompareByValueWithoutExpandingExponents: listed values
// are compared through canonical forms (canonKey) that must agree with
// JSON equality (equal) and, for numbers, with their exact values, never
// expanding an exponent: 1e400 equals 10e399, -0 equals 0, a number whose
// exponent has more than four digits (not read) only equals its own text,
// and objects equal whatever their members' order.
func TestListedValuesCompareByValueWithoutExpandingExponents(t *testing.T) {
	parse := func(s string) any {
		v, err := parseJSON([]byte(s))
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		return v
	}
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"1e400", "10e399", true},
		{"1e400", "1E+400", true},
		{"1e400", "1e401", false},
		{"0.10", "0.1", true},
		{"1.0", "1", true},
		{"100", "1e2", true},
		{"-0", "0", true},
		{"0e9999", "0.000", true},
		{"-1", "1", false},
		{"12", "1.2e1", true},
		{"12", "0.12e2", true},
		{"1e10000", "1e10000", true},
		{"1e10000", "10e9999", false},
		{"1e00001", "1e1", true}, // leading zeros of an exponent are not digits of it
		{"1e0001", "1e1", true},
		{`"1"`, "1", false},
		{`["a:","b"]`, `["a",":b"]`, false},
		{`{"a":1,"b":[1e2,"x"]}`, `{"b":[100,"x"],"a":1.0}`, true},
		{`{"a":1}`, `{"a":1,"b":2}`, false},
		{"null", "false", false},
		{"true", "true", true},
	} {
		a, b := parse(tc.a), parse(tc.b)
		if got := equal(a, b); got != tc.want {
			t.Errorf("equal(%s, %s) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
		if got := canonKey(a) == canonKey(b); got != tc.want {
			t.Errorf("canonKey(%s) == canonKey(%s) is %v, want %v (%q, %q)", tc.a, tc.b, got, tc.want, canonKey(a), canonKey(b))
		}
		ra, ok1 := ratOf(a)
		rb, ok2 := ratOf(b)
		if ok1 && ok2 && (ra.Cmp(rb) == 0) != tc.want {
			t.Errorf("%s and %s: exact values equal %v, canonical forms %v", tc.a, tc.b, ra.Cmp(rb) == 0, tc.want)
		}
	}
	// Every pair of numbers written in many ways: equal forms exactly when
	// equal values, and equal agrees.
	var nums []json.Number
	for _, sign := range []string{"", "-"} {
		for _, ip := range []string{"0", "1", "10", "12", "120"} {
			for _, fp := range []string{"", ".0", ".5", ".50", ".05"} {
				for _, ex := range []string{"", "e0", "e1", "e-1", "E+2", "e-02"} {
					nums = append(nums, json.Number(sign+ip+fp+ex))
				}
			}
		}
	}
	for _, x := range nums {
		rx, _ := ratOf(x)
		for _, y := range nums {
			ry, _ := ratOf(y)
			want := rx.Cmp(ry) == 0
			if got := canonKey(x) == canonKey(y); got != want || equal(x, y) != want {
				t.Fatalf("%s and %s: canonical forms equal %v, equal %v, exact values equal %v", x, y, got, equal(x, y), want)
			}
		}
	}
	for _, tc := range []struct {
		n    string
		want typeSet
	}{{"1e400", tInt}, {"1.5e1", tInt}, {"1.55e1", tFrac}, {"15e-1", tFrac}, {"10e-1", tInt}, {"-0.0", tInt}, {"1e10000", tFrac}, {"0.5", tFrac}} {
		n := json.Number(tc.n)
		want := tFrac
		if r, ok := ratOf(n); ok && r.IsInt() {
			want = tInt
		}
		if got := typeOfValue(n); got != tc.want || got != want {
			t.Errorf("typeOfValue(%s) = %s, want %s (exactly: %s)", tc.n, got, tc.want, want)
		}
	}
}

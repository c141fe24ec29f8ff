package capability

import (
	"fmt"
	"testing"

	"github.com/Masterminds/semver/v3"
)

// Benchmarks. The semver ones measure the raw Masterminds primitives in the
// same run, as the baseline for ours:
//
//	go test -run '^$' -bench . -benchmem ./capability/

// providerVersions returns 1,000 distinct versions (x.y.z for x, y, z in
// 0..9), one in seven with a prerelease, in a shuffled but fixed order.
func providerVersions(b *testing.B) ([]Version, []*semver.Version) {
	b.Helper()
	var ours []Version
	var theirs []*semver.Version
	for i := 0; i < 1000; i++ {
		j := (i * 389) % 1000 // 389 is coprime with 1000: a fixed shuffle
		s := fmt.Sprintf("%d.%d.%d", j/100, j/10%10, j%10)
		if j%7 == 0 {
			s += "-rc.1"
		}
		ours = append(ours, mustVersion(b, s))
		theirs = append(theirs, semver.MustParse(s))
	}
	return ours, theirs
}

const benchRange = ">=2.0.0 <5.0.0"

// BenchmarkRangeMatch1000: one parsed range against 1,000 versions.
func BenchmarkRangeMatch1000(b *testing.B) {
	vs, _ := providerVersions(b)
	r := mustRange(b, benchRange)
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		for _, v := range vs {
			if r.Contains(v) {
				n++
			}
		}
	}
	if n == 0 {
		b.Fatal("nothing matched")
	}
}

// BenchmarkSemverConstraintCheck1000: the same with Masterminds' parsed
// constraint (its grammar and prerelease rule differ; for comparison only).
func BenchmarkSemverConstraintCheck1000(b *testing.B) {
	_, vs := providerVersions(b)
	c, err := semver.NewConstraint(benchRange)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, v := range vs {
			c.Check(v)
		}
	}
}

// BenchmarkNegotiate1000: the worst case of §6.3 over 1,000 provider
// versions: the preferred and acceptable versions are absent, so it ends
// with the range step (highest version in range).
func BenchmarkNegotiate1000(b *testing.B) {
	vs, _ := providerVersions(b)
	h := NegotiateHints{
		Preferred:  mustVersion(b, "99.0.0"),
		Acceptable: versions(b, "98.0.0", "97.0.0", "96.0.0"),
		Range:      mustRange(b, ">=3.0.0 <7.0.0"),
	}
	b.ReportAllocs()
	for b.Loop() {
		id, err := Negotiate("org.agentries.code-review", h, vs)
		if err != nil || id.Version.String() != "6.9.9" {
			b.Fatal(id, err)
		}
	}
}

// BenchmarkVersionCompare: our precedence comparison of two prerelease
// versions of the same core (the costly case).
func BenchmarkVersionCompare(b *testing.B) {
	x, y := mustVersion(b, "1.2.3-beta.11"), mustVersion(b, "1.2.3-beta.2")
	b.ReportAllocs()
	for b.Loop() {
		if x.Compare(y) <= 0 {
			b.Fatal("order")
		}
	}
}

// BenchmarkSemverCompare: Masterminds' Compare on the same pair.
func BenchmarkSemverCompare(b *testing.B) {
	x, y := semver.MustParse("1.2.3-beta.11"), semver.MustParse("1.2.3-beta.2")
	b.ReportAllocs()
	for b.Loop() {
		if x.Compare(y) <= 0 {
			b.Fatal("order")
		}
	}
}

// BenchmarkSemverCompareRelease: Masterminds' Compare without prereleases.
func BenchmarkSemverCompareRelease(b *testing.B) {
	x, y := semver.MustParse("2.1.0"), semver.MustParse("2.0.9")
	b.ReportAllocs()
	for b.Loop() {
		if x.Compare(y) <= 0 {
			b.Fatal("order")
		}
	}
}

// BenchmarkVersionCompareRelease: ours without prereleases.
func BenchmarkVersionCompareRelease(b *testing.B) {
	x, y := mustVersion(b, "2.1.0"), mustVersion(b, "2.0.9")
	b.ReportAllocs()
	for b.Loop() {
		if x.Compare(y) <= 0 {
			b.Fatal("order")
		}
	}
}

// BenchmarkSemverCompare1000: Masterminds' Compare of 1,000 versions
// against one, the raw cost under a range scan.
func BenchmarkSemverCompare1000(b *testing.B) {
	_, vs := providerVersions(b)
	p := semver.MustParse("2.0.0")
	b.ReportAllocs()
	for b.Loop() {
		for _, v := range vs {
			v.Compare(p)
		}
	}
}

func BenchmarkParseVersion(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseVersion("1.2.3-rc.1+build.5"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSemverStrictNewVersion(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := semver.StrictNewVersion("1.2.3-rc.1+build.5"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseRange(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseRange(">=1.2.0 <2.0.0"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSemverNewConstraint(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := semver.NewConstraint(">=1.2.0 <2.0.0"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeInvoke: a by-name CAP_INVOKE with negotiation hints.
func BenchmarkDecodeInvoke(b *testing.B) {
	body := mustMarshal(b, map[string]any{
		"capability": "org.agentries.code-review",
		"negotiate":  map[string]any{"preferred": "2.2.0", "acceptable": []any{"2.1.0", "2.0.0"}},
		"params":     map[string]any{"code": "func main() {}", "language": "go"},
		"timeout_ms": 30000,
	})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeInvoke(body); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEncodeResult: a success CAP_RESULT.
func BenchmarkEncodeResult(b *testing.B) {
	r := Result{Status: StatusSuccess, Result: mustMarshal(b, map[string]any{"comments": []any{"looks good"}})}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.Encode(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeDeclare: a CAP_DECLARE with one full descriptor.
func BenchmarkDecodeDeclare(b *testing.B) {
	body := mustMarshal(b, map[string]any{"capabilities": []any{descMap()}})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeDeclare(body); err != nil {
			b.Fatal(err)
		}
	}
}

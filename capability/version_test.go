package capability

import (
	"strings"
	"testing"

	"github.com/Masterminds/semver/v3"
	"github.com/ampbundle/ampbundle/amp"
)

func mustVersion(t testing.TB, s string) Version {
	t.Helper()
	v, err := ParseVersion(s)
	if err != nil {
		t.Fatalf("ParseVersion(%q): %v", s, err)
	}
	return v
}

func TestParseVersion(t *testing.T) {
	for _, s := range []string{
		"0.0.0", "1.2.3", "2.1.0", "10.20.30", "1.0.0-alpha", "1.0.0-alpha.1",
		"1.0.0-0.3.7", "1.0.0-x.7.z.92", "1.0.0-alpha+001", "1.0.0+20130313144700",
		"1.0.0-beta+exp.sha.5114f85", "1.0.0-x-y-z.--", "1.0.0-99999999999999999999",
		"18446744073709551615.0.0", "1.0.0-rc.1+build.1-a",
		"1.0.0-" + strings.Repeat("a", MaxVersionLen-6),
	} {
		v := mustVersion(t, s)
		if v.String() != s || v.IsZero() {
			t.Errorf("ParseVersion(%q).String() = %q", s, v.String())
		}
	}
	for _, c := range []struct{ in, why string }{
		{"", "is empty"},
		{"2.0", "partial"},
		{"2", "partial"},
		{"1.2-beta", "partial"},
		{"v1.2.3", "v prefix"},
		{"V1.2.3", "v prefix"},
		{"01.2.3", "leading zero"},
		{"1.02.3", "leading zero"},
		{"1.2.03", "leading zero"},
		{"1.2.3-01", "leading zero"},
		{"1.2.3-", "prerelease"},
		{"1.2.3-a..b", "prerelease"},
		{"1.2.3-a_b", "prerelease"},
		{"1.2.3+", "build metadata"},
		{"1.2.3+a..b", "build metadata"},
		{"1.2.3-ä", "prerelease"},
		{" 1.2.3", "not a semantic version"},
		{"1.2.3 ", "not a semantic version"},
		{"1.2.x", "not a semantic version"},
		{"1.2.3.4", "not a semantic version"},
		{"18446744073709551616.0.0", "not a semantic version"},
		{"1.0.0-" + strings.Repeat("a", MaxVersionLen-5), "longer than 256"},
	} {
		_, err := ParseVersion(c.in)
		wantErr(t, err, amp.CodeBadRequest, ErrInvalidVersion, c.in)
		if !strings.Contains(err.Error(), c.why) {
			t.Errorf("ParseVersion(%q) = %v, want reason %q", c.in, err, c.why)
		}
	}
}

// TestVersionPrecedence checks SemVer 2.0.0 §11 on the spec's own chain,
// plus numeric identifiers beyond uint64 and build metadata.
func TestVersionPrecedence(t *testing.T) {
	chain := []string{
		"0.0.0-0", "0.0.0", "0.0.1", "0.1.0", "1.0.0-0", "1.0.0-1", "1.0.0-2", "1.0.0-10",
		"1.0.0-18446744073709551615", "1.0.0-99999999999999999999", "1.0.0-A", "1.0.0-Z",
		"1.0.0-a", "1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta",
		"1.0.0-beta.2", "1.0.0-beta.11", "1.0.0-rc.1", "1.0.0", "1.0.1", "1.1.0", "2.0.0",
		"2.1.0", "2.1.1", "10.0.0",
	}
	vs := make([]Version, len(chain))
	for i, s := range chain {
		vs[i] = mustVersion(t, s)
	}
	for i := range vs {
		for j := range vs {
			want := cmpUint(uint64(i), uint64(j))
			if got := vs[i].Compare(vs[j]); got != want {
				t.Errorf("%s vs %s: %d, want %d", chain[i], chain[j], got, want)
			}
		}
	}
	a, b := mustVersion(t, "1.0.0+a"), mustVersion(t, "1.0.0+b")
	if a.Compare(b) != 0 || a.Compare(mustVersion(t, "1.0.0")) != 0 {
		t.Error("build metadata must not change precedence")
	}
	if a == b || a == mustVersion(t, "1.0.0") {
		t.Error("versions differing in build metadata must not be ==")
	}
	// Two parses of equal strings (distinct allocations): == must not
	// depend on where the string came from.
	text := "1.0.0"
	if mustVersion(t, text) != mustVersion(t, strings.Clone(text)) {
		t.Error("equal strings must give == versions")
	}
}

// TestVersionCompareMatchesSemver checks Compare against Masterminds'
// Compare wherever prerelease identifiers fit in uint64 (Masterminds
// compares larger numeric identifiers as text, against SemVer §11).
func TestVersionCompareMatchesSemver(t *testing.T) {
	set := []string{
		"0.0.0", "0.0.1", "1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta.2",
		"1.0.0-beta.11", "1.0.0-rc.1", "1.0.0", "1.0.0+b", "1.2.3-1.a", "1.2.3-1.2",
		"1.2.3-a.1", "1.2.3", "2.0.0-0", "2.0.0", "18446744073709551615.0.0",
	}
	for _, x := range set {
		for _, y := range set {
			got := mustVersion(t, x).Compare(mustVersion(t, y))
			want := semver.MustParse(x).Compare(semver.MustParse(y))
			if got != want {
				t.Errorf("Compare(%s, %s) = %d, semver says %d", x, y, got, want)
			}
		}
	}
}

func TestVersionCompareDoesNotAllocate(t *testing.T) {
	a, b := mustVersion(t, "1.0.0-beta.11.x.y"), mustVersion(t, "1.0.0-beta.11.x.z")
	if n := testing.AllocsPerRun(100, func() { _ = a.Compare(b) }); n != 0 {
		t.Errorf("Compare allocates %.0f times", n)
	}
}

package capability

import (
	"strings"
	"testing"

	"github.com/Masterminds/semver/v3"
	"github.com/ampbundle/ampbundle/amp"
)

func mustRange(t testing.TB, s string) Range {
	t.Helper()
	r, err := ParseRange(s)
	if err != nil {
		t.Fatalf("ParseRange(%q): %v", s, err)
	}
	return r
}

// TestParseRangeRefused lists every refused form with the error name and
// the form the message must name.
func TestParseRangeRefused(t *testing.T) {
	many := strings.TrimSpace(strings.Repeat(">=1.0.0 ", MaxComparators+1))
	for _, c := range []struct {
		in   string
		name amp.ErrName
		form string
	}{
		{"1.0.0 || 2.0.0", ErrUnsupportedRange, "`||`"},
		{">=1.0.0 <2.0.0||>=3.0.0", ErrUnsupportedRange, "`||`"},
		{"1.0.0 | 2.0.0", ErrUnsupportedRange, "`||`"},
		{"1.x", ErrUnsupportedRange, "wildcard"},
		{"1.X", ErrUnsupportedRange, "wildcard"},
		{"*", ErrUnsupportedRange, "wildcard"},
		{"x", ErrUnsupportedRange, "wildcard"},
		{"1.2.*", ErrUnsupportedRange, "wildcard"},
		{"1.2.x", ErrUnsupportedRange, "wildcard"},
		{">=1.x", ErrUnsupportedRange, "wildcard"},
		{">=1.0.0 <2.x", ErrUnsupportedRange, "wildcard"},
		{"~1.2.3", ErrUnsupportedRange, "`~`"},
		{"~>1.2.3", ErrUnsupportedRange, "`~`"},
		{">=1.0.0 ~1.2.3", ErrUnsupportedRange, "`~`"},
		{"^1.2.3", ErrUnsupportedRange, "`^`"},
		{"1.0.0 - 2.0.0", ErrUnsupportedRange, "hyphen range"},
		{"!=1.2.3", ErrUnsupportedRange, "`!=`"},
		{">=1.0.0 !=1.2.3", ErrUnsupportedRange, "`!=`"},
		{">=1.0.0, <2.0.0", ErrUnsupportedRange, "comma"},
		{">=1.0.0,<2.0.0", ErrUnsupportedRange, "comma"},
		{"1.2", ErrUnsupportedRange, "partial version"},
		{"1", ErrUnsupportedRange, "partial version"},
		{">=1.2", ErrUnsupportedRange, "partial version"},
		{">=1.2.0 <2", ErrUnsupportedRange, "partial version"},
		{"v1.2.3", ErrUnsupportedRange, "v-prefixed"},
		{">=v1.2.3", ErrUnsupportedRange, "v-prefixed"},
		{"=V1.2.3", ErrUnsupportedRange, "v-prefixed"},
		{"", ErrInvalidRange, "empty"},
		{"   ", ErrInvalidRange, "empty"},
		{strings.Repeat(" ", MaxRangeLen+1), ErrInvalidRange, "longer than 256 bytes"},
		{">=1.0.0 <" + strings.Repeat("9", MaxRangeLen) + ".0.0", ErrInvalidRange, "longer than 256 bytes"},
		{many, ErrInvalidRange, "more than 16 comparators"},
		{">= 1.2.0", ErrInvalidRange, "operator without a version"},
		{">=1.2.0 <", ErrInvalidRange, "operator without a version"},
		{"=>1.2.3", ErrInvalidRange, "unsupported operator"},
		{"=<1.2.3", ErrInvalidRange, "unsupported operator"},
		{"==1.2.3", ErrInvalidRange, "unsupported operator"},
		{"<>1.2.3", ErrInvalidRange, "unsupported operator"},
		{">>1.2.3", ErrInvalidRange, "unsupported operator"},
		{">=1.2.3-01", ErrInvalidRange, "leading zero"},
		{">=01.2.3", ErrInvalidRange, "leading zero"},
		{"1.2.3\t<2.0.0", ErrInvalidRange, "not a semantic version"},
		{"latest", ErrInvalidRange, "not a semantic version"},
		{"1.2.3.4", ErrInvalidRange, "not a semantic version"},
	} {
		_, err := ParseRange(c.in)
		wantErr(t, err, amp.CodeBadRequest, c.name, c.in)
		if !strings.Contains(err.Error(), c.form) {
			t.Errorf("ParseRange(%q) = %v, want the message to name %q", c.in, err, c.form)
		}
	}
}

func TestParseRangeAccepted(t *testing.T) {
	sixteen := strings.TrimSpace(strings.Repeat(">=1.0.0 ", MaxComparators))
	exact := "1.0.0-" + strings.Repeat("a", MaxRangeLen-6)
	for _, s := range []string{
		"1.2.3", "=1.2.3", ">1.2.3", ">=1.2.3", "<1.2.3", "<=1.2.3",
		">=1.2.0 <2.0.0", "  >=1.2.0   <2.0.0 ", ">=1.0.0-rc.1 <1.0.0", "1.2.3+build",
		">=1.0.0 <=1.0.0 =1.0.0 1.0.0", sixteen, exact,
	} {
		r := mustRange(t, s)
		if r.String() != s || r.IsZero() {
			t.Errorf("ParseRange(%q).String() = %q", s, r.String())
		}
	}
	var zero Range
	if !zero.IsZero() || zero.String() != "" || zero.Contains(mustVersion(t, "1.0.0")) {
		t.Error("the zero Range must be zero, empty and contain nothing")
	}
}

func TestRangeContains(t *testing.T) {
	for _, c := range []struct {
		rng     string
		in, out []string
	}{
		{"2.1.0", []string{"2.1.0", "2.1.0+b.7"}, []string{"2.1.1", "2.0.0", "2.1.0-rc.1"}},
		{"=2.1.0", []string{"2.1.0", "2.1.0+b"}, []string{"2.1.1"}},
		{">2.1.0", []string{"2.1.1", "3.0.0"}, []string{"2.1.0", "2.1.0+b", "1.0.0", "2.1.1-rc.1"}},
		{">=2.1.0", []string{"2.1.0", "99.0.0"}, []string{"2.0.9", "2.1.0-rc.1"}},
		{"<2.1.0", []string{"2.0.9", "0.0.0"}, []string{"2.1.0", "2.1.0-rc.1", "2.0.9-rc.1"}},
		{"<=2.1.0", []string{"2.1.0", "2.0.0"}, []string{"2.1.1"}},
		{">=1.2.0 <2.0.0", []string{"1.2.0", "1.9.9", "1.99.0"}, []string{"1.1.9", "2.0.0", "2.0.0-rc.1", "1.5.0-beta"}},
		{">=3.0.0 <4.0.0", []string{"3.0.0", "3.9.9"}, []string{"2.0.0", "2.1.0", "4.0.0"}},
		// Prerelease rule: only with a comparator prerelease on the same
		// major.minor.patch.
		{">=1.2.3-alpha <2.0.0", []string{"1.2.3-alpha", "1.2.3-beta", "1.2.3", "1.9.0"}, []string{"1.2.3-0", "1.3.0-beta", "1.2.4-alpha", "2.0.0-rc.1"}},
		{">=1.0.0 <2.0.0-rc.2", []string{"1.5.0", "2.0.0-rc.1", "2.0.0-beta"}, []string{"2.0.0-rc.2", "2.0.0", "1.5.0-rc.1"}},
		{"1.0.0-rc.1", []string{"1.0.0-rc.1", "1.0.0-rc.1+b"}, []string{"1.0.0-rc.2", "1.0.0"}},
		{">=1.0.0", []string{"1.0.0", "2.0.0"}, []string{"2.0.0-rc.1", "1.0.1-0"}},
		{">=1.0.0-0", []string{"1.0.0-0", "1.0.0-alpha", "5.0.0"}, []string{"1.0.1-alpha", "0.9.9"}},
		{">2.0.0-alpha <2.0.0", []string{"2.0.0-beta"}, []string{"2.0.0-alpha", "2.0.0", "1.0.0"}},
		{">=1.0.0 <1.0.0", nil, []string{"1.0.0"}},
	} {
		r := mustRange(t, c.rng)
		for _, v := range c.in {
			if !r.Contains(mustVersion(t, v)) {
				t.Errorf("%q should contain %s", c.rng, v)
			}
		}
		for _, v := range c.out {
			if r.Contains(mustVersion(t, v)) {
				t.Errorf("%q should not contain %s", c.rng, v)
			}
		}
		if r.Contains(Version{}) {
			t.Errorf("%q contains the zero Version", c.rng)
		}
	}
}

// TestRangeMatchesSemverConstraint checks Contains against Masterminds'
// constraint Check on the ranges both accept. They agree except where the
// prerelease rules differ by design (Masterminds admits a prerelease when
// any comparator has one; we need the same major.minor.patch).
func TestRangeMatchesSemverConstraint(t *testing.T) {
	ranges := []string{
		"1.2.3", "=1.2.3", ">1.2.3", ">=1.2.3", "<1.2.3", "<=1.2.3", ">=1.2.0 <2.0.0",
		">1.0.0 <=1.5.0", ">=1.2.3-alpha <2.0.0", ">=1.0.0 <2.0.0-rc.2", "1.0.0-rc.1",
	}
	versions := []string{
		"0.9.0", "1.0.0", "1.0.0-rc.1", "1.0.0-rc.2", "1.2.2", "1.2.3", "1.2.3+b", "1.2.3-alpha",
		"1.2.3-beta", "1.2.4", "1.5.0", "1.5.1", "2.0.0-rc.1", "2.0.0-rc.2", "2.0.0", "3.0.0",
	}
	for _, rs := range ranges {
		r := mustRange(t, rs)
		c, err := semver.NewConstraint(rs)
		if err != nil {
			t.Fatalf("semver refuses %q: %v", rs, err)
		}
		for _, vs := range versions {
			v := mustVersion(t, vs)
			if v.pre != "" && !r.admits(v) {
				continue // different prerelease rule, by design
			}
			if got, want := r.Contains(v), c.Check(semver.MustParse(vs)); got != want {
				t.Errorf("%q contains %s: %v, semver says %v", rs, vs, got, want)
			}
		}
	}
}

// admits reports whether the prerelease rule lets v be compared at all.
func (r Range) admits(v Version) bool {
	for _, c := range r.cmps {
		if c.v.pre != "" && c.v.sameCore(&v) {
			return true
		}
	}
	return false
}

func TestRangeContainsDoesNotAllocate(t *testing.T) {
	r := mustRange(t, ">=1.2.3-alpha <2.0.0")
	v := mustVersion(t, "1.2.3-beta.4")
	if n := testing.AllocsPerRun(100, func() { _ = r.Contains(v) }); n != 0 {
		t.Errorf("Contains allocates %.0f times", n)
	}
}

package capability

import (
	"errors"
	"strings"

	"github.com/Masterminds/semver/v3"
)

// MaxVersionLen caps a version string in bytes. It is semver's own cap
// (semver.MaxVersionLen, the same as npm's).
const MaxVersionLen = semver.MaxVersionLen

// Version is a SemVer 2.0.0 version, parsed once with
// semver.StrictNewVersion and kept in a form that compares without
// allocating. It remembers its string exactly; under strict parsing the
// string is determined by the version's parts, so two Versions are == exactly
// when their strings are identical (build metadata included).
//
// The zero Version is not a version; IsZero reports it.
type Version struct {
	major, minor, patch uint64
	pre                 string // prerelease, without "-"
	raw                 string // the whole string, build metadata included
}

// ParseVersion parses a strict SemVer 2.0.0 version: "2.1.0",
// "1.0.0-rc.1+build.5". Partial versions ("2.0"), a "v" prefix, leading
// zeros, and anything longer than MaxVersionLen are refused with 4001
// invalid_version.
func ParseVersion(s string) (Version, error) {
	v, why := parseVersion(s)
	if why != "" {
		return Version{}, badRequest(ErrInvalidVersion, "version %s", why)
	}
	return v, nil
}

// parseVersion returns the version, or why s is not one. The reason never
// contains s.
func parseVersion(s string) (Version, string) {
	sv, err := semver.StrictNewVersion(s)
	if err != nil {
		return Version{}, versionProblem(s, err)
	}
	return Version{major: sv.Major(), minor: sv.Minor(), patch: sv.Patch(), pre: sv.Prerelease(), raw: s}, ""
}

// versionProblem explains a semver parse error without echoing s.
func versionProblem(s string, err error) string {
	switch {
	case s == "":
		return "is empty"
	case errors.Is(err, semver.ErrVersionTooLong):
		return "is longer than 256 bytes"
	case s[0] == 'v' || s[0] == 'V':
		return "has a v prefix"
	case errors.Is(err, semver.ErrSegmentStartsZero):
		return "has a numeric part with a leading zero"
	case errors.Is(err, semver.ErrInvalidPrerelease):
		return "has an invalid prerelease"
	case errors.Is(err, semver.ErrInvalidMetadata):
		return "has invalid build metadata"
	}
	core := s
	if i := strings.IndexAny(core, "-+"); i >= 0 {
		core = core[:i]
	}
	if parts := strings.Split(core, "."); len(parts) < 3 && allNumeric(parts) {
		return "is partial (major.minor.patch required)"
	}
	return "is not a semantic version 2.0.0 string"
}

// String returns the version exactly as parsed ("" for the zero Version).
func (v Version) String() string { return v.raw }

// IsZero reports whether v is the zero Version.
func (v Version) IsZero() bool { return v.raw == "" }

// Compare returns -1, 0 or +1 as v has lower, equal or higher SemVer 2.0.0
// precedence than w (§11 of SemVer: major, minor, patch numerically; a
// prerelease is lower than its release; prerelease identifiers compared
// one by one, numeric ones numerically and below alphanumeric ones, which
// compare in ASCII order; a shorter identifier list is lower when all
// before it are equal). Build metadata is ignored, so versions that differ
// only in build metadata compare 0; Order.CompareVersions gives the total
// order used for sorting. The zero Version compares as 0.0.0. Compare does
// not allocate.
func (v Version) Compare(w Version) int { return compareVersions(&v, &w) }

// compareVersions is Compare on pointers, for hot loops.
func compareVersions(v, w *Version) int {
	if c := cmpUint(v.major, w.major); c != 0 {
		return c
	}
	if c := cmpUint(v.minor, w.minor); c != 0 {
		return c
	}
	if c := cmpUint(v.patch, w.patch); c != 0 {
		return c
	}
	switch {
	case v.pre == w.pre:
		return 0
	case v.pre == "":
		return 1
	case w.pre == "":
		return -1
	}
	return comparePrerelease(v.pre, w.pre)
}

// sameCore reports whether v and w have the same major.minor.patch.
func (v *Version) sameCore(w *Version) bool {
	return v.major == w.major && v.minor == w.minor && v.patch == w.patch
}

func cmpUint(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// comparePrerelease compares two non-empty, valid prerelease strings
// identifier by identifier, without allocating. Numeric identifiers have no
// leading zeros (strict parsing), so a longer one is larger; this also
// orders identifiers beyond uint64 correctly.
func comparePrerelease(a, b string) int {
	for {
		ia := strings.IndexByte(a, '.')
		ib := strings.IndexByte(b, '.')
		x, y := a, b
		if ia >= 0 {
			x = a[:ia]
		}
		if ib >= 0 {
			y = b[:ib]
		}
		if c := compareIdentifier(x, y); c != 0 {
			return c
		}
		switch {
		case ia < 0 && ib < 0:
			return 0
		case ia < 0:
			return -1
		case ib < 0:
			return 1
		}
		a, b = a[ia+1:], b[ib+1:]
	}
}

func compareIdentifier(x, y string) int {
	xn, yn := numeric(x), numeric(y)
	switch {
	case xn && yn:
		if c := cmpUint(uint64(len(x)), uint64(len(y))); c != 0 {
			return c
		}
		return strings.Compare(x, y)
	case xn:
		return -1
	case yn:
		return 1
	}
	return strings.Compare(x, y)
}

func numeric(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

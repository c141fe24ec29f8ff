package offlineschema

import (
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// MaxDurationBytes caps a string checked against "format": "duration" or
// "period": a longer one is not one this agent accepts (4004
// schema_violation, keyword "format"). Real ones are under 64 bytes
// ("P1Y2M3DT4H5M6S", a period two RFC 3339 date-times around a slash).
const MaxDurationBytes = 256

// boundedFormats are the formats Compile's validator checks with its own
// code instead of the library's: "regex" (the library compiles the peer's
// string), "duration" and "period" (the library's isDuration copies its
// unit string once per unit: quadratic in the length). Every other format
// the library asserts reads its string a bounded number of times
// (strings.Split, net.ParseIP, url.Parse, time.Parse, a byte loop, or a
// length cap first) and is charged formatInsts a byte, or
// formatRegexInsts for those that split it into a slice (cost.go).
var boundedFormats = map[string]func(any) bool{
	"regex":    isBoundedRegex,
	"duration": isBoundedDuration,
	"period":   isBoundedPeriod,
}

// isBoundedDuration accepts what jsonschema v5.3.1's "duration" format
// accepts (the ISO 8601 ABNF of RFC 3339 Appendix A as the library reads
// it), up to MaxDurationBytes, in one pass: the library's check appends
// each unit letter to a string, and every unit list it accepts is at
// most three letters ("YMD", "HMS", or "W" alone), so a fourth unit
// decides the answer (false) without reading further.
// A value that is not a string is not this format's concern.
func isBoundedDuration(v any) bool {
	s, ok := v.(string)
	if !ok {
		return true
	}
	return len(s) <= MaxDurationBytes && durationLinear(s)
}

// durationLinear is the library's isDuration with the unit list kept in
// a fixed buffer.
func durationLinear(s string) bool {
	if len(s) == 0 || s[0] != 'P' {
		return false
	}
	s = s[1:]
	// parseUnits reads digits+unit pairs up to a 'T' (or the end), as
	// the library does; ok is false when a pair is malformed or there
	// are more than three units (no accepted list is longer).
	parseUnits := func() (units string, ok bool) {
		var buf [3]byte
		n := 0
		for len(s) > 0 && s[0] != 'T' {
			digits := false
			for len(s) > 0 && s[0] >= '0' && s[0] <= '9' {
				digits = true
				s = s[1:]
			}
			if !digits || len(s) == 0 {
				return "", false
			}
			if n == len(buf) {
				return "", false // a fourth unit: no list the library accepts
			}
			buf[n] = s[0]
			n++
			s = s[1:]
		}
		return string(buf[:n]), true
	}
	units, ok := parseUnits()
	if !ok {
		return false
	}
	if units == "W" {
		return len(s) == 0 // P_W
	}
	if len(units) > 0 {
		if !strings.Contains("YMD", units) {
			return false
		}
		if len(s) == 0 {
			return true // "P" dur-date
		}
	}
	if len(s) == 0 || s[0] != 'T' {
		return false
	}
	s = s[1:]
	units, ok = parseUnits()
	return ok && len(s) == 0 && len(units) > 0 && strings.Contains("HMS", units)
}

// isBoundedPeriod accepts what jsonschema v5.3.1's "period" format
// accepts (start/end, start/duration or duration/end), up to
// MaxDurationBytes, with the library's own "date-time" check (linear)
// and durationLinear.
func isBoundedPeriod(v any) bool {
	s, ok := v.(string)
	if !ok {
		return true
	}
	if len(s) > MaxDurationBytes {
		return false
	}
	slash := strings.IndexByte(s, '/')
	if slash == -1 {
		return false
	}
	dateTime := jsonschema.Formats["date-time"]
	start, end := s[:slash], s[slash+1:]
	if dateTime(start) {
		return dateTime(end) || durationLinear(end)
	}
	return durationLinear(start) && dateTime(end)
}

package offlineschema

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/santhosh-tekuri/jsonschema/v5"
)

// TestDurationFormatQuadraticUnits: "format": "duration" (and "period",
// which calls the same check) is asserted (Compile sets AssertFormat) and
// charged formatInsts instructions a byte, as if every format read the
// string a few times (cost.go). jsonschema v5.3.1's isDuration does not:
// it appends each unit letter with `units += s[:1]`, copying the whole
// unit string again for every "1Y" of the value, so "P" + "1Y" × n costs
// n²/2 bytes copied. A peer's 200 KB string (well inside a 1 MiB message)
// took about 6 s of CPU (1 MB: minutes). Compile's validator checks these
// formats with its own one-pass code, and a string over MaxDurationBytes
// is no duration: the value is refused (schema_violation on "format") at
// once.
func TestDurationFormatQuadraticUnits(t *testing.T) {
	const name = "TestDurationFormatQuadraticUnits"
	for _, tc := range []struct{ format, value string }{
		{"duration", "P" + strings.Repeat("1Y", 100000)},
		{"period", "P" + strings.Repeat("1D", 100000) + "/2020-01-01T00:00:00Z"},
		// Under the length cap, the one-pass check must stop too.
		{"duration", "P" + strings.Repeat("1Y", MaxDurationBytes/2-1)},
	} {
		sub := name + "/" + tc.format + fmt.Sprint(len(tc.value))
		if env := os.Getenv(victimChild); env != "" {
			if env != sub {
				continue
			}
			doc := `{"type":"string","format":"` + tc.format + `"}`
			sch, err := Compile(newLoader(map[string]string{"in.schema.json": doc}), "in.schema.json", Options{})
			if err != nil {
				fmt.Println("compile refused:", amp.SafeMessage(err))
				return
			}
			start := time.Now()
			err = sch.Validate(tc.value)
			fmt.Println("validate:", time.Since(start), err)
			return
		}
		out, timedOut := runVictimCase(t, name, sub, 3*time.Second)
		if timedOut {
			t.Errorf("format %q: validating one %d-byte string ran past %v (killed): isDuration is quadratic, charged as linear\nchild output:\n%s", tc.format, len(tc.value), victimLimit(3*time.Second), out)
		}
		if !strings.Contains(out, "validate:") || !strings.Contains(out, "schema_violation") {
			t.Errorf("format %q: a %d-byte string of units is no %s, want it refused\nchild output:\n%s", tc.format, len(tc.value), tc.format, out)
		}
	}
}

// runVictimCase runs the test named name in a child test binary with
// victimChild set to sub (one case of a table), and kills it after
// victimLimit(limit). It returns the child's output and whether it ran
// past that.
func runVictimCase(t *testing.T, name, sub string, limit time.Duration) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), victimLimit(limit))
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^"+name+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), victimChild+"="+sub)
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		return string(out), true
	}
	if err != nil {
		t.Fatalf("child %s failed: %v\n%s", sub, err, out)
	}
	return string(out), false
}

// durationAlphabet are the bytes that matter to the library's duration
// and period checks (digits, unit letters, the separators, and others).
const durationAlphabet = "P1T0YMDWHS/x"

// TestDurationFormatAcceptsWhatTheLibraryAccepts: the bounded checks give
// the library's verdict on every string of up to 6 bytes over
// durationAlphabet, on a table of real and tricky values, and on periods
// built from them, so replacing the library's check fails no schema that
// relied on it (up to MaxDurationBytes).
func TestDurationFormatAcceptsWhatTheLibraryAccepts(t *testing.T) {
	libDuration, libPeriod := jsonschema.Formats["duration"], jsonschema.Formats["period"]
	var all func(prefix string, n int, f func(string))
	all = func(prefix string, n int, f func(string)) {
		f(prefix)
		if n == 0 {
			return
		}
		for i := range len(durationAlphabet) {
			all(prefix+durationAlphabet[i:i+1], n-1, f)
		}
	}
	mismatches := 0
	check := func(s string) {
		if got, want := isBoundedDuration(s), libDuration(s); got != want && mismatches < 20 {
			mismatches++
			t.Errorf("duration %q: %v, the library %v", s, got, want)
		}
	}
	all("", 6, check)
	table := []string{
		"P1Y", "P1Y2M3D", "P1Y2M3DT4H5M6S", "PT1H", "PT1H2M3S", "P4W", "P1W2D", "P1D",
		"P", "PT", "P1YT", "PT1H1H", "P1M1Y", "PT1S1M", "P1Y1M1D1Y", "PT1H1M1S1H",
		"P1YT1H2M3S4H", "P12345678901234567890Y", "PT1Hx", "P1é", "P1\x00", "p1Y",
		"P1T", "P1TT1H", "PT1HT1M",
	}
	for _, s := range table {
		check(s)
	}
	dateTimes := []string{"2020-01-01T00:00:00Z", "2020-02-30T00:00:00Z", "2020-01-01T23:59:60+00:00", "2020-01-01T00:00:00.123-05:30", "x"}
	for _, a := range append(dateTimes, table...) {
		for _, b := range append(dateTimes, table...) {
			s := a + "/" + b
			if got, want := isBoundedPeriod(s), libPeriod(s); got != want {
				t.Errorf("period %q: %v, the library %v", s, got, want)
			}
		}
	}
	for _, s := range []string{"", "P1Y", "2020-01-01T00:00:00Z"} {
		if isBoundedPeriod(s) != libPeriod(s) {
			t.Errorf("period %q differs", s)
		}
	}
	// Not strings: not these formats' concern.
	if !isBoundedDuration(42) || !isBoundedPeriod(nil) {
		t.Error("a value that is not a string must pass the format check")
	}
	// Over the cap: refused, though the library would accept it.
	long := "P" + strings.Repeat("9", MaxDurationBytes) + "Y"
	if isBoundedDuration(long) || !libDuration(long) {
		t.Errorf("a %d-byte duration must be refused by the cap", len(long))
	}
}

// FuzzDurationFormat: the bounded duration and period checks agree with
// the library's on every string up to MaxDurationBytes.
func FuzzDurationFormat(f *testing.F) {
	for _, seed := range []string{"P1Y2M3DT4H5M6S", "P4W", "PT1H1H", "P1Y1M1D1Y", "2020-01-01T00:00:00Z/P1D", "P1D/2020-01-01T00:00:00Z", "P1T", "P"} {
		f.Add(seed)
	}
	libDuration, libPeriod := jsonschema.Formats["duration"], jsonschema.Formats["period"]
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > MaxDurationBytes {
			return
		}
		if got, want := isBoundedDuration(s), libDuration(s); got != want {
			t.Fatalf("duration %q: %v, the library %v", s, got, want)
		}
		if got, want := isBoundedPeriod(s), libPeriod(s); got != want {
			t.Fatalf("period %q: %v, the library %v", s, got, want)
		}
	})
}

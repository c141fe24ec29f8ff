package compat

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestOnePassPatternCompileUndercharged: checker.compile charged parsing
// a pattern one unit of MaxValueWork per 4 bytes of its text, as if
// compiling cost its text. Go's regexp builds, for an anchored,
// unambiguous pattern of under 1,000 instructions, a one-pass program
// that copies the pattern's character class into every instruction: a
// 13-byte pattern "^\pL{990}$" (995 instructions, within
// MaxPatternInsts) takes about 90 ms and 8 MB to compile, charged 3
// units. A hostile publisher's new version lists 120 distinct such
// patterns under "allOf" (3 KB; a 4 MiB document holds 150,000 of them);
// one compatibility check against an old version that lists strings
// ("enum") compiled every one of them to run it on the listed strings
// (patternKeyword): about 10 s and hundreds of MiB. Compiling is charged
// what it builds (offlineschema.PatternCost: instructions and class
// ranges, the one-pass copy included) before it is built, and a pattern
// over offlineschema.MaxPatternRanges is not compiled: the check is
// Unknown in well under 5 s.
func TestOnePassPatternCompileUndercharged(t *testing.T) {
	const name = "TestOnePassPatternCompileUndercharged"
	for _, tc := range []struct {
		label, old string
		pattern    func(i int) string
		n          int
	}{
		// Over offlineschema.MaxPatternRanges: refused before compiling.
		{"over-cap", `["a","b"]`, func(i int) string { return fmt.Sprintf(`^\\pL{%d}%c$`, 990-i%60, 'a'+rune(i/60)) }, 120},
		// Under it (about 170,000 ranges, 15 ms each): charged. Every
		// pattern matches the listed value, so each is compiled.
		{"under-cap", `["` + strings.Repeat("a", 250) + `"]`, func(i int) string { return `^\\pL{250}` + strings.Repeat("(?:)", i) + `$` }, 400},
	} {
		parts := make([]string, tc.n)
		for i := range parts {
			parts[i] = `{"pattern":"` + tc.pattern(i) + `"}`
		}
		files := map[string][]byte{
			"old.json": []byte(`{"type":"string","enum":` + tc.old + `}`),
			"new.json": []byte(`{"type":"string","allOf":[` + strings.Join(parts, ",") + `]}`),
		}
		sub := name + "/" + tc.label
		if env := os.Getenv(victimChild); env != "" {
			if env != sub {
				continue
			}
			src := NewSource(memLoader{files: files})
			start := time.Now()
			r := Backward(src, "old.json", src, "new.json")
			fmt.Println("verdict:", r.Verdict, "in", time.Since(start))
			return
		}
		// The child's own check takes about 1.3 s on a loaded 2-core
		// machine; the bound also covers starting the child under load.
		// Uncharged, the check took about 10 s.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^"+name+"$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), victimChild+"="+sub)
		out, err := cmd.CombinedOutput()
		timedOut := ctx.Err() != nil
		cancel()
		if timedOut {
			t.Errorf("%s: one compatibility check of a %d-byte schema of %d one-pass Unicode patterns ran past 5s (killed): compiling is charged by pattern text\nchild output:\n%s",
				tc.label, len(files["new.json"]), len(parts), out)
			continue
		}
		if err != nil {
			t.Fatalf("%s: child failed: %v\n%s", tc.label, err, out)
		}
		if !strings.Contains(string(out), "verdict: "+string(Unknown)) {
			t.Errorf("%s: one-pass Unicode patterns past the check's bounds must leave it undecided\nchild output:\n%s", tc.label, out)
		}
	}
}

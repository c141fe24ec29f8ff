package compat

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// victimChild is the environment variable that makes the test binary run
// one victim in a child process, so that a check that would burn CPU for
// minutes is killed at its deadline.
const victimChild = "AMPBUNDLE_VICTIM_CHILD"

// alternativesPattern is a "pattern" of n alternatives "[a-X]{1000}D",
// about 1,000 program instructions each; a string "aaa…D" keeps every
// alternative's NFA threads alive to its end.
func alternativesPattern(n int) string {
	alts := make([]string, n)
	for i := range alts {
		alts[i] = fmt.Sprintf("[a-%c]{1000}%d", 'b'+rune(i%24), i%10)
	}
	return strings.Join(alts, "|")
}

// TestListedValuesAgainstHugePatternCharged: a hostile publisher ships
// two versions of a capability. The old input schema lists strings
// ("enum"); the new one replaces them by one "pattern". Any
// compatibility check of the two (Backward; VerifyClaims at import,
// MatrixOf, `ampbundle compat`) reaches patternKeyword, which runs the
// pattern on every listed string. Go's regexp runs its NFA there:
// O(string length × instructions), seconds per string, each charged one
// unit of MaxValueWork per 64 values.
//
// Two pattern sizes: about 190,000 instructions (over the offline
// compiler's cap on one program, MaxPatternInsts: refused before it is
// compiled, undecided) and about 9,000 (under it: each match charged as
// program size × string length, over MaxValueWork). Either way the
// check must give Unknown in well under a second.
func TestListedValuesAgainstHugePatternCharged(t *testing.T) {
	const name = "TestListedValuesAgainstHugePatternCharged"
	for _, tc := range []struct {
		alts, length int
	}{
		{190, 3000},
		{9, 20000},
	} {
		pj, err := json.Marshal(alternativesPattern(tc.alts))
		if err != nil {
			t.Fatal(err)
		}
		listed := make([]string, 4)
		for i := range listed {
			listed[i] = fmt.Sprintf("%q", strings.Repeat("a", tc.length)+fmt.Sprint(i))
		}
		files := map[string][]byte{
			"old.json": []byte(`{"type":"string","enum":[` + strings.Join(listed, ",") + `]}`),
			"new.json": []byte(`{"type":"string","pattern":` + string(pj) + `}`),
		}
		sub := fmt.Sprintf("%d alternatives", tc.alts)
		if os.Getenv(victimChild) == name+"/"+sub {
			src := NewSource(memLoader{files: files})
			start := time.Now()
			r := Backward(src, "old.json", src, "new.json")
			fmt.Println("verdict:", r.Verdict, "in", time.Since(start))
			if r.Verdict != Unknown {
				fmt.Println("FAIL: verdict is not unknown")
				os.Exit(1)
			}
			continue
		}
		if os.Getenv(victimChild) != "" {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^"+name+"$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), victimChild+"="+name+"/"+sub)
		out, err := cmd.CombinedOutput()
		timedOut := ctx.Err() != nil
		cancel()
		if timedOut {
			t.Fatalf("%s: one compatibility check of a %d-byte enum against a %d-byte pattern ran past 3s (killed)\nchild output:\n%s",
				sub, len(files["old.json"]), len(files["new.json"]), out)
		}
		if err != nil {
			t.Fatalf("%s: child failed: %v\n%s", sub, err, out)
		}
	}
}

// TestListedValuesAgainstOrdinaryPatternDecided: the charge leaves
// ordinary checks their verdicts: listed strings that all match a small
// pattern are still proven compatible, one that does not is still
// incompatible.
func TestListedValuesAgainstOrdinaryPatternDecided(t *testing.T) {
	for _, tc := range []struct {
		enum string
		want Verdict
	}{
		{`["en","fr","de-AT"]`, Compatible},
		{`["en","FR"]`, Incompatible},
	} {
		files := map[string][]byte{
			"old.json": []byte(`{"type":"string","enum":` + tc.enum + `}`),
			"new.json": []byte(`{"type":"string","pattern":"^[a-z]{2,3}(-[A-Z]{2})?$"}`),
		}
		src := NewSource(memLoader{files: files})
		if r := Backward(src, "old.json", src, "new.json"); r.Verdict != tc.want {
			t.Errorf("%s: %s, want %s", tc.enum, r.Verdict, tc.want)
		}
	}
}

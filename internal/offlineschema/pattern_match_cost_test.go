package offlineschema

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp/syntax"
	"strings"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
)

// alternativesPattern is a "pattern" of n alternatives "[a-X]{1000}D":
// about 1,000 program instructions each, n × 16 bytes of schema text.
// Each alternative differs in its first piece, so the regexp parser
// cannot factor them into one, and a string "aaa…" keeps every
// alternative's NFA threads alive at every byte without matching.
func alternativesPattern(n int) string {
	alts := make([]string, n)
	for i := range alts {
		alts[i] = fmt.Sprintf("[a-%c]{1000}%d", 'b'+rune(i%24), i%10)
	}
	return strings.Join(alts, "|")
}

// patternSchema is a string schema whose "pattern" is p.
func patternSchema(t *testing.T, p string) string {
	t.Helper()
	pj, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	return `{"type":"string","pattern":` + string(pj) + `}`
}

// TestHugePatternCostScalesWithStringLength: a hostile publisher's input
// schema holds one "pattern" of about 190,000 regular-expression
// instructions (under MaxCompilePatternInsts, the cap of all patterns
// together). Go's regexp has no DFA: it runs the NFA simulation,
// O(len(string) x instructions), so a peer's 3,000-byte string "aaa…"
// costs about 5 s of CPU on the request path. The schema must be refused
// at import (QuickCheck) and at Compile: one pattern over MaxPatternInsts
// is invalid_schema; and should anything let it through, one Validate
// returns in well under a second.
func TestHugePatternCostScalesWithStringLength(t *testing.T) {
	const name = "TestHugePatternCostScalesWithStringLength"
	doc := patternSchema(t, alternativesPattern(190))
	value := strings.Repeat("a", 3000)
	if os.Getenv(victimChild) == name {
		sch, err := Compile(newLoader(map[string]string{"in.schema.json": doc}), "in.schema.json", Options{})
		if err != nil {
			fmt.Println("compile refused:", amp.SafeMessage(err))
			return
		}
		start := time.Now()
		err = sch.Validate(value)
		fmt.Println("validate:", time.Since(start), err)
		return
	}
	q := NewQuickCheck()
	if _, err := q.Add("in.schema.json", []byte(doc)); err != nil {
		t.Fatalf("QuickCheck.Add: %v", err)
	}
	if err := q.Check(newLoader(map[string]string{"in.schema.json": doc}), "in.schema.json", Options{}); !isInvalidSchema(err) {
		t.Errorf("QuickCheck vouches for a pattern of about 190,000 instructions: %v", err)
	}
	if _, err := Compile(newLoader(map[string]string{"in.schema.json": doc}), "in.schema.json", Options{}); !isInvalidSchema(err) {
		t.Errorf("Compile accepts a pattern of about 190,000 instructions: %v", err)
	}
	out, timedOut := runVictimChild(t, name, 3*time.Second)
	if timedOut {
		t.Fatalf("validating one 3,000-byte string against a %d-byte schema ran past %v (killed)\nchild output:\n%s", len(doc), victimLimit(3*time.Second), out)
	}
}

// isInvalidSchema reports whether err is invalid_schema.
func isInvalidSchema(err error) bool {
	var e *amp.Error
	return errors.As(err, &e) && e.Name == ErrInvalidSchema
}

// TestPatternUnderCapChargedByStringLength: within MaxPatternInsts a
// pattern of about 9,000 instructions still costs 9,000 steps per byte
// of a string: a peer's 20,000-byte string is 180 million steps (more
// than a second of CPU), and an array of them multiplies it. The cost
// bound must charge matching as program size × string length and refuse
// the value (1001 validation_too_costly) before the library runs, while
// an ordinary pattern on a long string stays well within it.
func TestPatternUnderCapChargedByStringLength(t *testing.T) {
	p := alternativesPattern(9)
	if n, err := PatternInsts(p); err != nil || n > MaxPatternInsts || n < 9000 {
		t.Fatalf("the test pattern is %d instructions (%v), not just under the cap", n, err)
	}
	sch, err := Compile(newLoader(map[string]string{"in.schema.json": patternSchema(t, p)}), "in.schema.json", Options{})
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	ran := false
	sch.onLibrary = func() { ran = true }
	start := time.Now()
	err = sch.Validate(strings.Repeat("a", 20000))
	var e *amp.Error
	if !errors.As(err, &e) || e.Name != ErrValidationTooCostly || ran {
		t.Fatalf("a 20,000-byte string against a 9,000-instruction pattern: %v after %v (library ran: %v), want validation_too_costly before the library", err, time.Since(start), ran)
	}

	ordinary, err := Compile(newLoader(map[string]string{"in.schema.json": patternSchema(t, "^[a-z]+$")}), "in.schema.json", Options{})
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	if err := ordinary.Validate(strings.Repeat("a", 1<<20)); err != nil {
		t.Fatalf("a 1 MiB string against an ordinary pattern: %v", err)
	}
}

// TestPatternPropertiesAndPropertyNamesChargedByNameLength: the same
// program runs on every member name, through "patternProperties" and
// through a "pattern" under "propertyNames"; a peer's long member names
// are charged like long strings.
func TestPatternPropertiesAndPropertyNamesChargedByNameLength(t *testing.T) {
	pj, err := json.Marshal(alternativesPattern(9))
	if err != nil {
		t.Fatal(err)
	}
	value := map[string]any{strings.Repeat("a", 20000): 1}
	for _, doc := range []string{
		`{"type":"object","patternProperties":{` + string(pj) + `:true}}`,
		`{"type":"object","propertyNames":{"pattern":` + string(pj) + `}}`,
	} {
		sch, err := Compile(newLoader(map[string]string{"in.schema.json": doc}), "in.schema.json", Options{})
		if err != nil {
			t.Fatalf("compile: %v", err)
		}
		var e *amp.Error
		if err := sch.Validate(value); !errors.As(err, &e) || e.Name != ErrValidationTooCostly {
			t.Errorf("%.40s…: a 20,000-byte member name against a 9,000-instruction pattern: %v, want validation_too_costly", doc, err)
		}
	}
}

// TestPatternInstsBoundsTheProgram: PatternInsts, which builds no
// program, must never count fewer instructions than regexp.Compile
// builds, or a pattern over MaxPatternInsts would pass the cap (and a
// match be under-charged).
func TestPatternInstsBoundsTheProgram(t *testing.T) {
	for _, p := range []string{
		"", "a", "^a{999}$", "^[a-z0-9-]{1,63}$", "(a|b)*c+d?", "(?i)hello\\s+world", "x{2,5}", "x{3,}", "x{0}", "(x*)*",
		"((a{2,4}){3}|b{0,7})+", "[^a]{10}|.{3,}?", "\\bfoo\\B$", "(?:ab|cd|ef){5,9}", "a+?b??c*?", "(?s).*", "(a{0,3}){0,}",
		"^(([0-9a-fA-F]{1,4}:){7}[0-9a-fA-F]{1,4}|([0-9a-fA-F]{1,4}:){1,7}:)$",
		"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$",
		strings.Repeat("(a|bc)?", 50), strings.Repeat("[a-c]{10}", 30), alternativesPattern(9),
	} {
		got, err := PatternInsts(p)
		if err != nil {
			t.Fatalf("%q: %v", p, err)
		}
		re, err := syntax.Parse(p, syntax.Perl)
		if err != nil {
			t.Fatal(err)
		}
		prog, err := syntax.Compile(re.Simplify())
		if err != nil {
			t.Fatal(err)
		}
		if got < len(prog.Inst) {
			t.Errorf("%.60q: PatternInsts %d < %d instructions compiled", p, got, len(prog.Inst))
		}
		if got > 2*len(prog.Inst)+8 {
			t.Errorf("%.60q: PatternInsts %d far over the %d instructions compiled", p, got, len(prog.Inst))
		}
	}
}

// TestPatternOverCapRefusedBeforeCompiling: a 7 KB pattern "a{1000}…"
// compiles to a million instructions (hundreds of MiB). CompilePattern,
// the one place this module compiles a schema's or a peer's regular
// expression, refuses it having only parsed it.
func TestPatternOverCapRefusedBeforeCompiling(t *testing.T) {
	p := strings.Repeat("a{1000}", 1000)
	allocs := testing.AllocsPerRun(3, func() {
		if _, _, err := CompilePattern(p); err == nil {
			t.Fatal("CompilePattern accepted a program of a million instructions")
		}
	})
	if allocs > 20000 {
		t.Fatalf("refusing a 7 KB pattern made %v allocations", allocs)
	}
	if _, n, err := CompilePattern("^[a-z0-9-]{1,63}$"); err != nil || n > 200 {
		t.Fatalf("an ordinary pattern: %d instructions, %v", n, err)
	}
}

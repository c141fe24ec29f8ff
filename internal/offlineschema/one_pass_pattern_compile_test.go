package offlineschema

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/internal/testalloc"
)

// onePassUnicodePatterns returns n distinct "pattern" keywords
// "^\pL{k}$" (k just under 1,000): each about k+4 instructions by
// PatternInsts, one program of under 1,000 instructions, anchored and
// unambiguous, so regexp.Compile also builds its one-pass form, which
// copies the 1,318 runes of the \pL class into every instruction (and a
// next-state table as long): about 8 MB and 90 ms per pattern, for
// 10 bytes of schema text.
func onePassUnicodePatterns(n int) []string {
	ps := make([]string, n)
	for i := range ps {
		ps[i] = fmt.Sprintf(`^\\pL{%d}$`, 990-i%50)
	}
	return ps
}

// TestOnePassPatternCompileMemory: MaxPatternInsts and
// MaxCompilePatternInsts (200,000 in one compile) assumed "building the
// program costs its size in memory". Go's regexp also builds a one-pass
// program for an anchored, unambiguous pattern of under 1,000
// instructions, and that one copies each instruction's character class:
// with a Unicode class (\pL: 659 ranges) a pattern of 995 instructions
// costs about 8 MB retained and 90 ms to compile. A hostile publisher's
// input schema of 40 such patterns (1 KB of text, 40,000 instructions, a
// fifth of the cap) passed every compile limit and QuickCheck: 303 MiB
// retained and 5 s to compile. The one-pass copy is counted
// (MaxPatternRanges, MaxCompilePatternRanges): such a schema is
// invalid_schema, found without compiling.
//
// Should: the compile is refused by the ranges cap on one pattern (an
// overLimit, what the load finds before the library compiles a pattern),
// whatever the time; the time is logged.
func TestOnePassPatternCompileMemory(t *testing.T) {
	ps := onePassUnicodePatterns(40)
	parts := make([]string, len(ps))
	total := 0
	for i, p := range ps {
		parts[i] = `{"pattern":"` + p + `"}`
		n, err := PatternInsts(strings.ReplaceAll(p, `\\`, `\`))
		if err != nil || n > MaxPatternInsts {
			t.Fatalf("%s: %d instructions, %v", p, n, err)
		}
		total += n
	}
	if total > MaxCompilePatternInsts {
		t.Fatalf("the test schema is %d instructions, over MaxCompilePatternInsts", total)
	}
	doc := `{"type":"string","allOf":[` + strings.Join(parts, ",") + `]}`
	start := time.Now()
	sch, err := Compile(newLoader(map[string]string{"in.schema.json": doc}), "in.schema.json", Options{})
	t.Logf("a %d-byte schema of %d patterns (%d instructions in all): %v after %v", len(doc), len(ps), total, err, time.Since(start))
	var over *overLimit
	if !isInvalidSchema(err) || !errors.As(err, &over) || !strings.Contains(over.why, "200,000 ranges") {
		var ms runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&ms)
		runtime.KeepAlive(sch)
		t.Fatalf("a %d-byte schema of %d one-pass Unicode patterns (%d instructions in all, %d MiB of heap after): %v, want invalid_schema over the ranges of one pattern, found before compiling",
			len(doc), len(ps), total, ms.HeapAlloc>>20, err)
	}
}

// TestPatternParseRangesAmplification: Go's regexp parser copies a Unicode
// table for every \p class and expands a case-folded class range rune by
// rune, so a few bytes of pattern cost thousands of ranges before any
// program exists: "[\pL\pL…]" of 30 KB took 1.7 s and 300 MB to parse,
// "(?i)[B-\x{1e942}]" repeated 100 times (1.3 KB) 0.5 s. Measured from the
// text first (patternParseRanges), such a pattern is over
// MaxPatternRanges: a schema holding it is invalid_schema, a peer's string
// of it is no "format": "regex" (schema_violation), both without parsing
// it; ordinary Unicode and case-insensitive patterns stay accepted.
// MeasurePattern must find each over the cap from its text (no
// instructions measured: nothing parsed); the times are logged.
func TestPatternParseRangesAmplification(t *testing.T) {
	huge := []string{
		"[" + strings.Repeat(`\pL`, 10000) + "]",
		strings.Repeat(`\pL`, 10000),
		"(?i)" + strings.Repeat(`[B-\x{1e942}]`, 100),
		"(?i)" + strings.Repeat(`\w`, 20000),
		"[" + strings.Repeat(`\p{Greek}`, 2000) + "]",
		// The parser looks for ":]" from every "[:" to the end: quadratic
		// (80 KB took 0.2 s, 1 MiB half a minute).
		"[" + strings.Repeat(`[:`, 40000) + "x]",
	}
	fmtSch, err := Compile(newLoader(map[string]string{"in.schema.json": `{"type":"string","format":"regex"}`}), "in.schema.json", Options{})
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	for _, p := range huge {
		start := time.Now()
		c, err := MeasurePattern(p)
		if err == nil {
			t.Errorf("a %d-byte pattern that parses into hundreds of thousands of ranges was accepted", len(p))
		}
		if c.Ranges <= MaxPatternRanges || c.Insts != 0 {
			// Insts is measured from the parse tree: 0, the text alone
			// refused it.
			t.Errorf("a %d-byte pattern of %d parse ranges measured %+v, want over MaxPatternRanges from its text, before any parse", len(p), patternParseRanges(p), c)
		}
		doc, _ := json.Marshal(map[string]any{"type": "string", "pattern": p})
		_, err = Compile(newLoader(map[string]string{"in.schema.json": string(doc)}), "in.schema.json", Options{})
		if !isInvalidSchema(err) {
			t.Errorf("a schema with a %d-byte pattern of %d parse ranges: %v, want invalid_schema", len(p), patternParseRanges(p), err)
		}
		var e *amp.Error
		if err := fmtSch.Validate(p); !errors.As(err, &e) || e.Name != ErrSchemaViolation {
			t.Errorf("a %d-byte peer string against format regex: %v, want schema_violation", len(p), err)
		}
		t.Logf("refusing a %d-byte pattern three ways took %v", len(p), time.Since(start))
	}
	// Each string under the cap, but many of them: charged by their parse
	// ranges, not their bytes ("\pL\pL" is 6 bytes, 3,000 ranges).
	many := make([]any, 3000)
	for i := range many {
		many[i] = `\pL\pL`
	}
	arrSch, err := Compile(newLoader(map[string]string{"in.schema.json": `{"type":"array","items":{"type":"string","format":"regex"}}`}), "in.schema.json", Options{})
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	var e *amp.Error
	if err := arrSch.Validate(many); !errors.As(err, &e) || e.Name != ErrValidationTooCostly {
		t.Errorf("3,000 strings of two Unicode classes against format regex: %v, want validation_too_costly", err)
	}
	if err := arrSch.Validate([]any{`^\pL+$`, `(?i)^[a-z]+$`, `^[0-9a-f]{32}$`}); err != nil {
		t.Errorf("ordinary regexes against format regex: %v", err)
	}
	for _, p := range []string{`^[\pL_][\pL\pN_]{0,63}$`, `(?i)^[a-z0-9._%+-]+@[a-z0-9.-]+\.[a-z]{2,}$`, `^\p{Greek}+$`, `(?i)\w+`, `[[:alpha:]]`, `\Q[\pL\E`} {
		if _, err := MeasurePattern(p); err != nil {
			t.Errorf("an ordinary pattern %q: %v", p, err)
		}
		if !isBoundedRegex(p) {
			t.Errorf("an ordinary pattern %q is no regex", p)
		}
	}
}

// TestPatternCostBoundsCompileMemory: what regexp.Compile allocates for a
// pattern stays within a small multiple of its measured cost (text,
// instructions and ranges), for patterns that are one-pass, that are not,
// with Unicode classes, folding and alternations: the cost is an upper
// bound of the work, not an estimate of one case.
func TestPatternCostBoundsCompileMemory(t *testing.T) {
	for _, p := range []string{
		`^\pL{150}$`, `^[\pL_][\pL\pN_]{0,63}$`, `^(?:\p{Greek}|\p{Latin}|\p{Cyrillic})+$`,
		`^\p{Greek}?\p{Latin}?\p{Cyrillic}?\p{Han}?\p{Arabic}?\p{Hebrew}?$`,
		`(?i)^[a-z]{1,300}$`, `^\w{300}$`, `[\pL\pN]+`, `^(?:[^\pL]\pL){100}$`, `^(\pN|\pL)*$`,
	} {
		c, err := MeasurePattern(p)
		if err != nil {
			t.Fatalf("%q: %v", p, err)
		}
		alloc := int(testalloc.Least(func() { _, err = regexp.Compile(p) }))
		if err != nil {
			t.Fatalf("%q: %v", p, err)
		}
		bound := 64*(c.Ranges+len(p)) + 512*c.Insts + 16<<10
		if alloc > bound {
			t.Errorf("%q: compiling allocated %d bytes, over 64 a range and 512 an instruction (%d ranges, %d instructions)", p, alloc, c.Ranges, c.Insts)
		}
	}
}

// TestManyPatternsUnderCapCountedInAll: patterns each under
// MaxPatternRanges still add up: a schema of 15 anchored \pL patterns of
// about 170,000 ranges each (2.5 million, 40 MB and 0.3 s to compile) is
// over MaxCompilePatternRanges.
func TestManyPatternsUnderCapCountedInAll(t *testing.T) {
	parts := make([]string, 15)
	for i := range parts {
		parts[i] = fmt.Sprintf(`{"pattern":"^\\pL{%d}$"}`, 250-i)
	}
	doc := `{"type":"string","allOf":[` + strings.Join(parts, ",") + `]}`
	_, err := Compile(newLoader(map[string]string{"in.schema.json": doc}), "in.schema.json", Options{})
	if !isInvalidSchema(err) {
		t.Fatalf("%d patterns of about 170,000 ranges each: %v, want invalid_schema", len(parts), err)
	}
	var over *overLimit
	if !errors.As(err, &over) || !strings.Contains(over.why, "2,000,000") {
		t.Fatalf("refused for another reason: %v", err)
	}
}

// FuzzMeasurePattern: measuring any text never panics, and reads it as
// Go's parser does (a pattern it accepts compiles, one Go refuses it
// refuses or finds over a cap). What measuring costs in time is
// BenchmarkMeasurePattern's (a fuzz input's time is no verdict on a busy
// machine).
func FuzzMeasurePattern(f *testing.F) {
	for _, seed := range []string{
		`^[a-z0-9-]{1,63}$`, `^\pL{990}$`, `(?i)[B-\x{1e942}]`, `[\p{Greek}\PL]`, `[]a]`, `[^]a-]`,
		`[[:alpha:][:^digit:]]`, `\Q[\pL\E`, `[\x{10FFFF}-\x{10FFFF}]`, `[\0-\777]`, `(?i:[a-\x41])`, `[\pL`, `\`, `[\p{`,
		`^(?:a|b)*c?$`, `(?is-m)^[\w\s]+$`, `[a-\z]`, `[\8]`, `^(a?){100}$`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, p string) {
		if len(p) > 4096 {
			return
		}
		c, err := MeasurePattern(p)
		if c.Over() {
			return // refused before Go would parse it: not compiled here either
		}
		_, rerr := regexp.Compile(p)
		if err == nil && rerr != nil {
			t.Fatalf("%q: measured %+v, but Go refuses it: %v", p, c, rerr)
		}
		if err != nil && rerr == nil {
			t.Fatalf("%q: refused (%v) within the caps (%+v), but Go compiles it", p, err, c)
		}
	})
}

// BenchmarkMeasurePattern times measuring a 4 KB pattern (FuzzMeasurePattern's
// largest input) whose text the parser's reading is quadratic in, "[" then
// "[:" repeated (the parser looks for ":]" from every "[:" to the end;
// patternParseRanges finds the last ":]" once): "hostile", against its
// twin, 4 KB of plain literal text ("twin"). The ratio should stay a
// small multiple: both are a pass over the text.
func BenchmarkMeasurePattern(b *testing.B) {
	for _, bc := range []struct{ name, p string }{
		{"hostile", "[" + strings.Repeat("[:", 2047) + "x]"},
		{"twin", strings.Repeat("ab", 2048)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				_, _ = MeasurePattern(bc.p)
			}
		})
	}
}

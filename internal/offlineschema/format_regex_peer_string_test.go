package offlineschema

import (
	"errors"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/internal/testalloc"
)

// TestFormatRegexCompilesPeerString: "format": "regex" is one of the
// formats Compile accepts and asserts; jsonschema v5.3.1 checks it with
// regexp.Compile on the peer's string. Go's parser accepts counted
// repeats up to its own size cap (millions of instructions), so a 7 KB
// string "a{1000}a{1000}…" would make the agent build a program of a
// million instructions (hundreds of MiB) for one small value. The check
// must be bounded before any program is built: such a string is not a
// regex this agent accepts (schema_violation, keyword "format"), found
// with a few MiB at most, while an ordinary regex stays valid.
func TestFormatRegexCompilesPeerString(t *testing.T) {
	sch, err := Compile(newLoader(map[string]string{"in.schema.json": `{"type":"string","format":"regex"}`}), "in.schema.json", Options{})
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	value := strings.Repeat("a{1000}", 1000) // 7,000 bytes
	alloc := testalloc.Least(func() { err = sch.Validate(value) })
	const limit = 4 << 20
	if alloc > limit {
		t.Fatalf("validating one %d-byte string against {\"format\":\"regex\"} allocated %d KiB (limit %d KiB)", len(value), alloc>>10, limit>>10)
	}
	var e *amp.Error
	var vs []Violation
	if errors.As(err, &e) {
		vs, _ = e.Details.([]Violation)
	}
	if e == nil || e.Name != ErrSchemaViolation || len(vs) != 1 || vs[0].Keyword != "format" {
		t.Fatalf("a regex of a million instructions: %v (%v), want schema_violation on format", err, vs)
	}
	for _, ok := range []string{"^[a-z0-9-]{1,63}$", "a{1000}", "(foo|bar)+"} {
		if err := sch.Validate(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	if err := sch.Validate("(unclosed"); !errors.As(err, &e) || e.Name != ErrSchemaViolation {
		t.Errorf("a string that is no regex: %v", err)
	}
}

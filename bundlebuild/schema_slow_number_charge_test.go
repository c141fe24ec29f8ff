package bundlebuild

import (
	"strings"
	"testing"
)

// TestSchemaWithOneSlowNumberIsChargedItsNumbersAsText: one number
// strconv rounds slowly (1e-320) sends a schema's whole parse down the
// path that keeps every number as text before it rounds it
// (docs/SPEC-DECISIONS.md JSON-3), and a 4 MiB enum of 17-byte numbers so
// parsed raised the heap 1.57 times what it was charged, the charge of
// the same schema without that number (JSON-8). Its charge now adds
// heapPerTextNumber and heapPerTextNumberByte for each number, on the
// quick check and once on the compile; a schema of fast numbers, and
// one whose only slow-looking text is inside a string, is charged as
// before.
func TestSchemaWithOneSlowNumberIsChargedItsNumbersAsText(t *testing.T) {
	items := strings.Repeat(",12345678901234567", 1000)
	const numbers = 1001 // and the first
	for _, c := range []struct {
		name, first string
		text        bool
	}{
		{"fast", "1", false},
		{"slow", "1e-320", true},
		{"slow text in a string", `"1e-320"`, false},
	} {
		data := []byte(`{"enum":[` + c.first + items + `]}`)
		s := structure(data)
		base := heapPerByteRead*int64(len(data)) + heapPerArray*1 + heapPerObject*1 + heapPerMember*s.members
		var extra int64
		if c.text {
			extra = heapPerTextNumber*numbers + heapPerTextNumberByte*int64(1000*17+len(c.first))
		}
		if got := schemaHeapBound(data); got != base+extra {
			t.Errorf("%s: charged %d, want %d (%d for numbers kept as text)", c.name, got, base+extra, extra)
		}
		compileBase := compileTreeFactor*base + compilePerByte*int64(len(data)) + heapPerCompiledObject*1
		if got := compileHeapBound(data); got != compileBase+extra {
			t.Errorf("%s: compile charged %d, want %d", c.name, got, compileBase+extra)
		}
	}
}

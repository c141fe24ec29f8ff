package offlineschema

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
)

// benchParams is a realistic CAP_INVOKE params value for paramsSchema: ten
// properties, one of them an array, one a nested object.
func benchParams() map[string]any {
	return map[string]any{
		"text": "hello", "target": "en", "source": "fr",
		"email": "user@example.com", "when": "2026-11-22T10:00:00Z",
		"count": int64(42), "ratio": 0.5, "mode": "fast", "code": "SECRET7",
		"tags":   []any{"a", "b"},
		"nested": map[string]any{"a~b": true, "c/d": int64(1), "deep": map[string]any{"z": "x"}},
	}
}

// BenchmarkCompile compiles paramsSchema, whose two $refs load a shared
// artifact: two Loads, two meta-schema validations, the walk.
func BenchmarkCompile(b *testing.B) {
	l := newLoader(with(bundleFiles, rootKey, paramsSchema))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Compile(l, rootKey, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkValidate(b *testing.B) {
	s := mustCompile(b, newLoader(with(bundleFiles, rootKey, paramsSchema)), rootKey)
	item, err := amp.Marshal(benchParams())
	if err != nil {
		b.Fatal(err)
	}
	valid, err := ValueFromCBOR(item)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("valid", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := s.Validate(valid); err != nil {
				b.Fatal(err)
			}
		}
	})
	invalid := benchParams()
	delete(invalid, "target")
	invalid["text"] = int64(1)
	invalid["email"] = "nope"
	b.Run("three-violations", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := s.Validate(invalid); err == nil {
				b.Fatal("accepted")
			}
		}
	})
}

func BenchmarkValueFromCBOR(b *testing.B) {
	item, err := amp.Marshal(benchParams())
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(item)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ValueFromCBOR(item); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkToCBOR(b *testing.B) {
	item, _ := amp.Marshal(benchParams())
	v, err := ValueFromCBOR(item)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ToCBOR(v); err != nil {
			b.Fatal(err)
		}
	}
}

// largeSchema is a draft 2020-12 object schema of about size bytes: many
// string properties with a bound, a pattern and a description, the shape
// of docs/PERFORMANCE.md's P8 sources.
func largeSchema(size int) []byte {
	var b strings.Builder
	b.WriteString(`{"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object", "properties": {`)
	for j := 0; b.Len() < size-100; j++ {
		if j > 0 {
			b.WriteString(",\n")
		}
		fmt.Fprintf(&b, `"field_%06d": {"type": "string", "maxLength": 64, "pattern": "^[a-z0-9_]+$", "description": "field %d, described at some length so that the schema is large"}`, j, j)
	}
	b.WriteString(`}, "additionalProperties": false}`)
	return []byte(b.String())
}

// BenchmarkQuickCheck: Add and Check of one 1 MiB schema (vouched for,
// nothing compiled), against BenchmarkQuickCheckBaseline, the JSON parse of
// the same bytes (encoding/json into any) that it cannot do without.
func BenchmarkQuickCheck(b *testing.B) {
	doc := largeSchema(1 << 20)
	l := newLoader(map[string]string{rootKey: string(doc)})
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		q := NewQuickCheck()
		if _, err := q.Add(rootKey, doc); err != nil {
			b.Fatal(err)
		}
		if err := q.Check(l, rootKey, Options{}); err != nil || q.NeedsCompile(rootKey) != "" {
			b.Fatal(err, q.NeedsCompile(rootKey))
		}
	}
}

func BenchmarkQuickCheckBaseline(b *testing.B) {
	doc := largeSchema(1 << 20)
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		var v any
		if err := json.Unmarshal(doc, &v); err != nil {
			b.Fatal(err)
		}
	}
}

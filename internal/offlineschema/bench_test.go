package offlineschema

import (
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

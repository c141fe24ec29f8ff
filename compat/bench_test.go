package compat

import (
	"encoding/json"
	"fmt"
	"testing"
)

// hundredVersions builds one bundle's worth of a capability with 100
// versions: each adds an optional input property and an output property,
// every fifth narrows an enum in a shared definition, all through $refs.
func hundredVersions() (memLoader, []Version) {
	l := memLoader{files: map[string][]byte{}}
	src := NewSource(l)
	var vs []Version
	for i := 0; i < 100; i++ {
		dir := fmt.Sprintf("capabilities/org.example.translate/1.%d.0/", i)
		langs := []any{"en", "fr", "de", "es", "it", "nl", "pt", "sv", "da", "fi", "pl", "cs", "sk", "hu", "ro", "bg", "el", "et", "lv", "lt", "sl"}
		langs = langs[:21-i/5]
		common := map[string]any{"$defs": map[string]any{
			"lang": map[string]any{"type": "string", "enum": langs},
			"text": map[string]any{"type": "string", "maxLength": 10000, "minLength": 1},
		}}
		inProps := map[string]any{
			"text":   map[string]any{"$ref": "common.json#/$defs/text"},
			"source": map[string]any{"$ref": "common.json#/$defs/lang"},
			"target": map[string]any{"$ref": "common.json#/$defs/lang"},
		}
		outProps := map[string]any{"text": map[string]any{"$ref": "common.json#/$defs/text"}}
		for j := 0; j < i%12; j++ {
			inProps[fmt.Sprintf("opt%d", j)] = map[string]any{"type": "integer", "minimum": 0}
			outProps[fmt.Sprintf("extra%d", j)] = map[string]any{"type": "array", "items": map[string]any{"type": "string"}}
		}
		in := map[string]any{"type": "object", "properties": inProps, "required": []any{"text", "target"}, "additionalProperties": false}
		out := map[string]any{"type": "object", "properties": outProps, "required": []any{"text"}}
		for k, v := range map[string]any{"input.schema.json": in, "output.schema.json": out, "common.json": common} {
			b, _ := json.Marshal(v)
			l.files[dir+k] = b
		}
		vs = append(vs, Version{Src: src, Input: dir + "input.schema.json", Output: dir + "output.schema.json"})
	}
	return l, vs
}

// BenchmarkAllVerdicts100Versions computes the verdicts of every ordered
// pair of a 100-version capability (9,900 pairs, both sides each), from a
// fresh Source (documents parsed inside the measured loop). Target: under
// 1 s per iteration.
func BenchmarkAllVerdicts100Versions(b *testing.B) {
	l, _ := hundredVersions()
	b.ReportAllocs()
	for b.Loop() {
		src := NewSource(l)
		n := 0
		for i := 0; i < 100; i++ {
			for j := 0; j < 100; j++ {
				if i == j {
					continue
				}
				dir := func(k int) string { return fmt.Sprintf("capabilities/org.example.translate/1.%d.0/", k) }
				r := Versions(Version{Src: src, Input: dir(i) + "input.schema.json", Output: dir(i) + "output.schema.json"},
					Version{Src: src, Input: dir(j) + "input.schema.json", Output: dir(j) + "output.schema.json"})
				if r.Verdict() == Compatible {
					n++
				}
			}
		}
		if n == 0 {
			b.Fatal("no compatible pair: the fixture is wrong")
		}
	}
}

// BenchmarkPrimitiveDecodeAllSchemas is the primitive the checker is
// compared with: decoding every schema document of the 100 versions once.
func BenchmarkPrimitiveDecodeAllSchemas(b *testing.B) {
	l, _ := hundredVersions()
	b.ReportAllocs()
	for b.Loop() {
		for _, v := range l.files {
			if _, err := parseJSON(v); err != nil {
				b.Fatal(err)
			}
		}
	}
}

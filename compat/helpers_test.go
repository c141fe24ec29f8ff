package compat

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"testing"
)

// memLoader serves artifacts from memory and maps absolute $ids to keys.
type memLoader struct {
	files map[string][]byte
}

func (l memLoader) Load(key string) ([]byte, error) {
	b, ok := l.files[key]
	if !ok {
		return nil, fs.ErrNotExist
	}
	return b, nil
}

func (l memLoader) KeyForID(id string) (string, bool) {
	keys := make([]string, 0, len(l.files))
	for k := range l.files {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		var m map[string]any
		if json.Unmarshal(l.files[k], &m) != nil {
			continue
		}
		s, _ := m["$id"].(string)
		if u, err := url.Parse(s); err == nil && u.IsAbs() {
			u.Fragment = ""
			if u.String() == id {
				return k, true
			}
		}
	}
	return "", false
}

// vector is one file of testdata/compat.
type vector struct {
	Description string                     `json:"description"`
	Old         map[string]json.RawMessage `json:"old"`
	New         map[string]json.RawMessage `json:"new"`
	Backward    expectation                `json:"backward"`
	Forward     expectation                `json:"forward"`
}

type expectation struct {
	Verdict Verdict `json:"verdict"`
	Rule    string  `json:"rule,omitempty"`
	Pointer *string `json:"pointer,omitempty"`
}

func loaderOf(m map[string]json.RawMessage) memLoader {
	l := memLoader{files: map[string][]byte{}}
	for k, v := range m {
		l.files[k] = v
	}
	return l
}

func readVectors(t testing.TB) map[string]vector {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "testdata", "compat", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no vectors under testdata/compat (err %v)", err)
	}
	out := map[string]vector{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var v vector
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if v.Old["schema.json"] == nil || v.New["schema.json"] == nil || v.Backward.Verdict == "" || v.Forward.Verdict == "" {
			t.Fatalf("%s: a vector needs old and new schema.json and both expectations", f)
		}
		out[filepath.Base(f)] = v
	}
	return out
}

// matches reports whether a report meets an expectation: same verdict and,
// when not compatible, a finding with the expected rule and pointer.
func matches(r Report, e expectation) error {
	if r.Verdict != e.Verdict {
		return fmt.Errorf("verdict %s, want %s (findings %+v)", r.Verdict, e.Verdict, r.Findings)
	}
	if e.Verdict == Compatible {
		if len(r.Findings) != 0 {
			return fmt.Errorf("compatible with findings %+v", r.Findings)
		}
		return nil
	}
	if e.Pointer == nil || e.Rule == "" {
		return fmt.Errorf("the vector names no rule and pointer for a %s verdict", e.Verdict)
	}
	for _, f := range r.Findings {
		if f.Rule == e.Rule && f.Pointer == *e.Pointer && f.Verdict == e.Verdict {
			return nil
		}
	}
	return fmt.Errorf("no %s finding %s at %q in %+v", e.Verdict, e.Rule, *e.Pointer, r.Findings)
}

// equal is JSON equality: numbers by value, objects by members. It walks
// both values whole (the checker calls equalWithin, which bounds and
// charges the walk).
func equal(a, b any) bool {
	left := maxInt
	return equalWithin(a, b, &left)
}

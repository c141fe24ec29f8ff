package compat_test

import (
	"fmt"
	"io/fs"

	"github.com/ampbundle/ampbundle/compat"
)

// files is a Loader over in-memory artifacts (a bundle reader or store
// supplies verified bytes the same way).
type files map[string]string

func (f files) Load(key string) ([]byte, error) {
	b, ok := f[key]
	if !ok {
		return nil, fs.ErrNotExist
	}
	return []byte(b), nil
}

func (f files) KeyForID(string) (string, bool) { return "", false }

func ExampleBackward() {
	old := compat.NewSource(files{
		"in.json":     `{"type":"object","properties":{"lang":{"$ref":"common.json#/$defs/lang"}}}`,
		"common.json": `{"$defs":{"lang":{"enum":["en","fr","de"]}}}`,
	})
	next := compat.NewSource(files{
		"in.json":     `{"type":"object","properties":{"lang":{"$ref":"common.json#/$defs/lang"}},"required":["lang"]}`,
		"common.json": `{"$defs":{"lang":{"enum":["en","fr"]}}}`,
	})
	r := compat.Backward(old, "in.json", next, "in.json")
	fmt.Println(r.Verdict)
	for _, f := range r.Findings {
		fmt.Println(f.Rule, f.Pointer)
	}
	fmt.Println(compat.Backward(next, "in.json", old, "in.json").Verdict)
	// Output:
	// incompatible
	// enum_narrowed /properties/lang/$ref/enum
	// required_added /required
	// compatible
}

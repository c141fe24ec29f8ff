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

func ExampleParseBridge() {
	b, err := compat.ParseBridge([]byte(`{"bridge": 1,
		"input":  [{"op": "rename", "from": "/text", "to": "/source_text"},
		           {"op": "default", "path": "/options/formality", "value": "neutral"}],
		"output": [{"op": "rename", "from": "/translated_text", "to": "/translation"}]}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	req, _ := b.ApplyInput(map[string]any{"text": "Hallo"})
	res, _ := b.ApplyOutput(map[string]any{"translated_text": "Hello"})
	fmt.Println(req)
	fmt.Println(res)
	// A required field of the provider's input may never be removed.
	drop, _ := compat.ParseBridge([]byte(`{"bridge": 1, "input": [{"op": "drop-optional", "path": "/q"}]}`))
	err = compat.CheckBridge(drop, compat.Schema{Loader: files{"in.json": `{"type":"object","required":["q"]}`}, Key: "in.json"}, compat.Schema{})
	fmt.Println(err != nil)
	// Output:
	// map[options:map[formality:neutral] source_text:Hallo]
	// map[translation:Hello]
	// true
}

package offlineschema_test

import (
	"errors"
	"fmt"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/internal/offlineschema"
)

// bundle is a Loader over in-memory artifacts. A real one reads the store
// and verifies each artifact's hash before returning it.
type bundle map[string]string

func (b bundle) Load(key string) ([]byte, error) {
	doc, ok := b[key]
	if !ok {
		return nil, amp.NewError(amp.CodeUnavailable, "artifact is not in the store")
	}
	return []byte(doc), nil
}

func (b bundle) KeyForID(id string) (string, bool) {
	for key, doc := range b {
		if got, err := offlineschema.SchemaID([]byte(doc)); err == nil && got != "" && got == id {
			return key, true
		}
	}
	return "", false
}

func Example() {
	b := bundle{
		"capabilities/org.example.translate/2.1.0/input.schema.json": `{
			"type": "object",
			"required": ["text", "target"],
			"additionalProperties": false,
			"properties": {
				"text":   {"type": "string", "maxLength": 100},
				"target": {"$ref": "../../../schemas/common.json#/$defs/lang"}
			}
		}`,
		"schemas/common.json": `{"$defs": {"lang": {"type": "string", "pattern": "^[a-z]{2}$"}}}`,
	}
	s, err := offlineschema.Compile(b, "capabilities/org.example.translate/2.1.0/input.schema.json", offlineschema.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(s.Deps())

	// CAP_INVOKE params arrive as CBOR: {"text": 7, "target": "eng"}.
	params, _ := amp.Marshal(map[string]any{"text": 7, "target": "eng"})
	v, err := offlineschema.ValueFromCBOR(params)
	if err != nil {
		fmt.Println(err)
		return
	}
	err = s.Validate(v)
	var e *amp.Error
	if errors.As(err, &e) {
		fmt.Println(e.Code, e.Message)
		for _, v := range e.Details.([]offlineschema.Violation) {
			fmt.Printf("%s: %s\n", v.InstanceLocation, v.Keyword)
		}
	}
	// Output:
	// [capabilities/org.example.translate/2.1.0/input.schema.json schemas/common.json]
	// 4004 SCHEMA_VIOLATION value does not match the schema (2 violations)
	// /target: pattern
	// /text: type
}

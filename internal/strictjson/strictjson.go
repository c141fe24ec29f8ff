package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Check reports whether data is exactly one JSON value with no duplicate
// object member and arrays and objects nested at most maxDepth deep.
func Check(data []byte, maxDepth int) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	type frame struct {
		obj    bool
		keys   map[string]bool
		expKey bool
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return errors.New("not valid JSON") // empty
		}
		if err != nil {
			return errors.New("not valid JSON")
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if d, ok := tok.(json.Delim); ok {
			switch d {
			case '{', '[':
				if top != nil && top.obj {
					top.expKey = true
				}
				if len(stack) >= maxDepth {
					return fmt.Errorf("nested deeper than %d", maxDepth)
				}
				stack = append(stack, &frame{obj: d == '{', keys: map[string]bool{}, expKey: true})
			default:
				stack = stack[:len(stack)-1]
			}
			if len(stack) == 0 {
				break // one whole value read
			}
			continue
		}
		if len(stack) == 0 {
			break // a scalar value
		}
		if top != nil && top.obj {
			if top.expKey {
				k, _ := tok.(string)
				if top.keys[k] {
					return fmt.Errorf("duplicate member %q", k)
				}
				top.keys[k] = true
				top.expKey = false
			} else {
				top.expKey = true
			}
		}
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("trailing data")
	}
	return nil
}

// Decode checks data as Check does and decodes it into v, refusing a
// member v has no field for.
func Decode(data []byte, v any, maxDepth int) error {
	if err := Check(data, maxDepth); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &te):
			return fmt.Errorf("member %q has the wrong type", te.Field)
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			return errors.New("unknown member " + strings.TrimPrefix(err.Error(), "json: unknown field "))
		default:
			return errors.New("not valid JSON")
		}
	}
	return nil
}

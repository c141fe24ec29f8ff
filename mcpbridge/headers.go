package mcpbridge

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/ampbundle/ampbundle/amp"
)

// ErrHeaderAnnotation names a capability whose input schema carries an
// "x-mcp-header" annotation (MCP SEP-2243: a parameter mirrored into an
// Mcp-Param-* HTTP header) that the MCP SDK refuses: on a property that
// is not typed string, integer or boolean, a value that is not a
// non-empty HTTP token (RFC 9110 §5.6.2), or a header named twice
// (letter case ignored). The SDK's Server.AddTool panics on such a tool;
// the bridge does not offer it (docs/SPEC-DECISIONS.md MCP-8).
const ErrHeaderAnnotation = "input_schema_header_annotation"

// ErrSchemaAmbiguous names an input schema the bridge cannot read as the
// SDK would: an object along a "properties" chain that repeats a key (two
// JSON decoders may keep different copies), or "properties" nested more
// than maxHeaderDepth deep. Such a tool is not offered.
const ErrSchemaAmbiguous = "input_schema_ambiguous"

// maxHeaderDepth bounds the "properties" nesting the header check walks
// (the store already bounds a schema document's nesting at 128).
const maxHeaderDepth = 128

// headerKey is the annotation the SDK reads on a property schema.
const headerKey = "x-mcp-header"

// checkHeaderAnnotations refuses an input schema document on which the
// MCP SDK's AddTool would panic (go-sdk v1.8.0, mcp/streamable_headers.go,
// validateParamHeaderAnnotations): it walks the same objects (the root's
// "properties", each property's "properties", and so on) and applies the
// same rules, with stricter reading: any "x-mcp-header" key counts, even
// one the SDK would skip (a "type" that is not a string, a sibling that
// is not an object). The error names the property by its JSON Pointer in
// the document, quoted and clipped, never more of the schema.
func checkHeaderAnnotations(doc []byte) error {
	root, err := objectMembers(doc)
	if err != nil || root == nil {
		return err // the caller already refused a root that is not an object
	}
	return checkHeaderProps(root, "", 0, map[string]bool{})
}

// checkHeaderProps checks the "properties" of one schema object.
func checkHeaderProps(obj map[string]json.RawMessage, ptr string, depth int, seen map[string]bool) error {
	raw, ok := obj["properties"]
	if !ok {
		return nil
	}
	if depth >= maxHeaderDepth {
		return amp.Named(amp.CodeUnavailable, ErrSchemaAmbiguous, "the input schema nests \"properties\" more than %d deep", maxHeaderDepth)
	}
	props, err := objectMembers(raw)
	if err != nil || props == nil {
		return err
	}
	for _, name := range sortedKeys(props) {
		at := ptr + "/properties/" + escapePointer(name)
		prop, err := objectMembers(props[name])
		if err != nil {
			return err
		}
		if prop == nil {
			continue // a boolean schema: nothing to annotate
		}
		if h, has := prop[headerKey]; has {
			if err := checkOneHeader(prop, h, at, seen); err != nil {
				return err
			}
		}
		if err := checkHeaderProps(prop, at, depth+1, seen); err != nil {
			return err
		}
	}
	return nil
}

// checkOneHeader applies the SDK's rules to one annotated property.
func checkOneHeader(prop map[string]json.RawMessage, h json.RawMessage, at string, seen map[string]bool) error {
	var typ string
	if json.Unmarshal(prop["type"], &typ) != nil || (typ != "string" && typ != "integer" && typ != "boolean") {
		return amp.Named(amp.CodeUnavailable, ErrHeaderAnnotation, "the x-mcp-header at %s is on a property not typed string, integer or boolean", quotePtr(at))
	}
	var name string
	if json.Unmarshal(h, &name) != nil || name == "" || !httpToken(name) {
		return amp.Named(amp.CodeUnavailable, ErrHeaderAnnotation, "the x-mcp-header at %s is not a non-empty http token", quotePtr(at))
	}
	lower := strings.ToLower(name)
	if seen[lower] {
		return amp.Named(amp.CodeUnavailable, ErrHeaderAnnotation, "the x-mcp-header at %s names a header another property names", quotePtr(at))
	}
	seen[lower] = true
	return nil
}

// objectMembers decodes a JSON object's members, refusing a repeated key
// (ErrSchemaAmbiguous); a JSON value that is not an object is nil, nil.
func objectMembers(data []byte) (map[string]json.RawMessage, error) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 || data[0] != '{' {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if _, err := dec.Token(); err != nil {
		return nil, amp.Named(amp.CodeUnavailable, ErrSchemaAmbiguous, "the input schema is not valid json")
	}
	out := map[string]json.RawMessage{}
	for dec.More() {
		tok, err := dec.Token()
		key, isStr := tok.(string)
		if err != nil || !isStr {
			return nil, amp.Named(amp.CodeUnavailable, ErrSchemaAmbiguous, "the input schema is not valid json")
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, amp.Named(amp.CodeUnavailable, ErrSchemaAmbiguous, "the input schema is not valid json")
		}
		if _, dup := out[key]; dup {
			return nil, amp.Named(amp.CodeUnavailable, ErrSchemaAmbiguous, "an object of the input schema repeats a key")
		}
		out[key] = v
	}
	return out, nil
}

// httpToken reports whether s is an HTTP token (RFC 9110 §5.6.2: 1*tchar).
func httpToken(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case '0' <= c && c <= '9', 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// escapePointer escapes a member name for a JSON Pointer (RFC 6901).
func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// quotePtr quotes a JSON Pointer for a message: ASCII only, at most 120
// bytes of it.
func quotePtr(p string) string {
	if len(p) > 120 {
		p = p[:120] + "…"
	}
	return strconv.QuoteToASCII(p)
}

func sortedKeys(m map[string]json.RawMessage) []string {
	return slices.Sorted(maps.Keys(m))
}

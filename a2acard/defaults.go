package a2acard

import (
	"encoding/json"

	"github.com/ampbundle/ampbundle/internal/jcs"
)

// presence says when a member of an a2a.proto message holds its default
// value and so is left out of the signed form (A2A §8.4.1, §5.7).
type presence int

const (
	// kept: a REQUIRED member, never left out.
	kept presence = iota
	// plain: a scalar without `optional`: left out when "", false, 0 or
	// null.
	plain
	// repeated: a repeated or map member: left out when [], {} or null.
	repeated
	// tracked: an `optional` scalar or a message, whose presence is
	// tracked: left out only when null.
	tracked
)

// kind is the JSON type of a plain or repeated member. A value of another
// type is never its default: it is kept, and so signed.
type kind int

const (
	anyKind kind = iota
	stringKind
	boolKind
	listKind
	mapKind
)

// field is one member of a message: its presence, the JSON type of a
// plain or repeated member, and, for a message or a repeated message, the
// shape of that message.
type field struct {
	presence presence
	kind     kind
	shape    shape
}

// shape returns the field a message has under a member name; false for a
// name the message does not define (such members are signed as they are).
type shape func(name string) (field, bool)

// cardShape is AgentCard of the A2A 1.0 specification/a2a.proto.
func cardShape(name string) (field, bool) {
	switch name {
	case "name", "description", "version", "defaultInputModes", "defaultOutputModes":
		return field{presence: kept}, true
	case "supportedInterfaces":
		return field{presence: kept, shape: interfaceShape}, true
	case "capabilities":
		return field{presence: kept, shape: capabilitiesShape}, true
	case "skills":
		return field{presence: kept, shape: skillShape}, true
	case "provider", "documentationUrl", "iconUrl":
		return field{presence: tracked}, true
	case "securitySchemes":
		return field{presence: repeated, kind: mapKind}, true
	case "securityRequirements":
		return field{presence: repeated, kind: listKind}, true
	}
	return field{}, false
}

func interfaceShape(name string) (field, bool) {
	if name == "tenant" {
		return field{presence: plain, kind: stringKind}, true
	}
	return field{}, false
}

func capabilitiesShape(name string) (field, bool) {
	switch name {
	case "streaming", "pushNotifications", "extendedAgentCard":
		return field{presence: tracked}, true
	case "extensions":
		return field{presence: repeated, kind: listKind, shape: extensionShape}, true
	}
	return field{}, false
}

func extensionShape(name string) (field, bool) {
	switch name {
	case "uri", "description":
		return field{presence: plain, kind: stringKind}, true
	case "required":
		return field{presence: plain, kind: boolKind}, true
	case "params":
		return field{presence: tracked}, true
	}
	return field{}, false
}

func skillShape(name string) (field, bool) {
	switch name {
	case "examples", "inputModes", "outputModes", "securityRequirements":
		return field{presence: repeated, kind: listKind}, true
	}
	return field{}, false
}

// stripDefaults returns o without the members of s that hold their
// default value, recursing into the messages s describes. Members s does
// not define, and values of an unexpected type, are kept as they are (the
// signature covers them; Verify's shape check refuses the wrong types).
func stripDefaults(o jcs.Object, s shape) jcs.Object {
	out := make(jcs.Object, 0, len(o))
	for _, m := range o {
		f, known := s(m.Name)
		if known && isDefault(m.Value, f) {
			continue
		}
		if known && f.shape != nil {
			m.Value = stripValue(m.Value, f.shape)
		}
		out = append(out, m)
	}
	return out
}

// stripValue strips a message, or each message of a repeated member.
func stripValue(v any, s shape) any {
	switch t := v.(type) {
	case jcs.Object:
		return stripDefaults(t, s)
	case []any:
		arr := make([]any, len(t))
		for i, x := range t {
			arr[i] = stripValue(x, s)
		}
		return arr
	}
	return v
}

// isDefault reports whether v is f's default value: null (unless f is
// kept), or the empty value of f's own JSON type. A value of another type
// (false for a string member, {} for a list) is not a default.
func isDefault(v any, f field) bool {
	if v == nil {
		return f.presence != kept
	}
	switch f.presence {
	case plain:
		switch t := v.(type) {
		case string:
			return f.kind == stringKind && t == ""
		case bool:
			return f.kind == boolKind && !t
		case json.Number:
			s, err := jcs.CanonicalNumber(string(t))
			return f.kind == anyKind && err == nil && s == "0"
		}
	case repeated:
		switch t := v.(type) {
		case []any:
			return f.kind == listKind && len(t) == 0
		case jcs.Object:
			return f.kind == mapKind && len(t) == 0
		}
	}
	return false
}

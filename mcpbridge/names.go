package mcpbridge

import (
	"strings"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/capability"
)

// MaxToolName is the longest MCP tool name (the MCP tool-name rules: 1 to
// 128 characters of [A-Za-z0-9_.-]).
const MaxToolName = 128

// ErrToolName is the name of the error of a tool name that maps to no
// capability id.
const ErrToolName = "invalid_tool_name"

// ToolName maps a capability id to its MCP tool name (docs/FORMAT.md, "MCP
// tool names"; docs/SPEC-DECISIONS.md MCP-1): every "_" of the name
// doubled, then one "_", then the version with its "+" (build metadata)
// written "_":
//
//	org.example.greet.hello:1.0.0        → org.example.greet.hello_1.0.0
//	org.example.a_b:2.0.0-rc.1+build.7   → org.example.a__b_2.0.0-rc.1_build.7
//
// Capability names are [a-z0-9._-] and versions [0-9A-Za-z.+-], so the
// result is of the MCP alphabet, and ParseToolName reverses it. An id whose
// tool name would be longer than MaxToolName has none (ok false): it is
// not offered over MCP.
func ToolName(id capability.ID) (string, bool) {
	s := strings.ReplaceAll(id.Name, "_", "__") + "_" + strings.ReplaceAll(id.Version.String(), "+", "_")
	if len(s) > MaxToolName || id.Name == "" {
		return "", false
	}
	return s, true
}

// ParseToolName reverses ToolName: scanning from the left, "__" is a "_"
// of the name and the first lone "_" ends the name; the rest is the
// version with "_" for "+". A name that does not come from ToolName is
// 4001 invalid_tool_name (the name itself is never echoed).
func ParseToolName(tool string) (capability.ID, error) {
	if tool == "" || len(tool) > MaxToolName {
		return capability.ID{}, badToolName()
	}
	var name strings.Builder
	for i := 0; i < len(tool); i++ {
		c := tool[i]
		if c != '_' {
			name.WriteByte(c)
			continue
		}
		if i+1 < len(tool) && tool[i+1] == '_' {
			name.WriteByte('_')
			i++
			continue
		}
		id, err := capability.ParseID(name.String() + ":" + strings.ReplaceAll(tool[i+1:], "_", "+"))
		if err != nil {
			return capability.ID{}, badToolName()
		}
		if back, ok := ToolName(id); !ok || back != tool {
			return capability.ID{}, badToolName()
		}
		return id, nil
	}
	return capability.ID{}, badToolName()
}

// badToolName is ParseToolName's refusal.
func badToolName() error {
	return amp.Named(amp.CodeBadRequest, ErrToolName, "the tool name does not name a capability version")
}

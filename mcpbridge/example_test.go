package mcpbridge_test

import (
	"fmt"

	"github.com/ampbundle/ampbundle/capability"
	"github.com/ampbundle/ampbundle/mcpbridge"
)

// A capability id and its MCP tool name, both ways.
func ExampleToolName() {
	for _, s := range []string{"org.example.translate.text:2.1.0", "org.example.code_review:1.0.0-rc.1+build.7"} {
		id, _ := capability.ParseID(s)
		tool, _ := mcpbridge.ToolName(id)
		back, _ := mcpbridge.ParseToolName(tool)
		fmt.Println(tool, back)
	}
	// Output:
	// org.example.translate.text_2.1.0 org.example.translate.text:2.1.0
	// org.example.code__review_1.0.0-rc.1_build.7 org.example.code_review:1.0.0-rc.1+build.7
}

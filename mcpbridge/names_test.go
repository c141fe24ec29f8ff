package mcpbridge

import (
	"testing"

	"github.com/ampbundle/ampbundle/capability"
)

// TestToolNameMappingIsReversible: a tool name that mapped back to another
// capability version than the one listed would let a host approve one
// tool and run another.
func TestToolNameMappingIsReversible(t *testing.T) {
	for _, c := range []struct{ id, tool string }{
		{"org.example.greet.hello:1.0.0", "org.example.greet.hello_1.0.0"},
		{"org.example.a_b:2.0.0-rc.1+build.7", "org.example.a__b_2.0.0-rc.1_build.7"},
		{"org.example.a_:1.2.3", "org.example.a___1.2.3"},
		{"org.ex-ample.x__y:0.0.1+a-b", "org.ex-ample.x____y_0.0.1_a-b"},
	} {
		id, err := capability.ParseID(c.id)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := ToolName(id)
		if !ok || got != c.tool {
			t.Fatalf("ToolName(%s) = %q, want %q", c.id, got, c.tool)
		}
		back, err := ParseToolName(got)
		if err != nil || back != id {
			t.Fatalf("ParseToolName(%q) = %v, %v, want %s", got, back, err, c.id)
		}
	}
}

// TestForeignToolNamesNameNoCapability: names a host made up, or altered,
// map to nothing rather than to a near capability.
func TestForeignToolNamesNameNoCapability(t *testing.T) {
	for _, tool := range []string{"", "x", "org.example.greet.hello", "org.example.greet.hello_", "org.example.greet.hello__1.0.0",
		"org.example.greet.hello_1.0", "Org.example.greet.hello_1.0.0", "org.example.greet.hello_1.0.0_", "org.example.greet.hello_1.0.0__x",
		"org.example.greet.hello_1.0.0+b", string(make([]byte, 129))} {
		if id, err := ParseToolName(tool); err == nil {
			t.Fatalf("ParseToolName(%q) = %s, want an error", tool, id)
		}
	}
}

// TestTooLongIDHasNoToolName: an id over the MCP limit is not offered
// (rather than truncated into another tool's name).
func TestTooLongIDHasNoToolName(t *testing.T) {
	name := "org.example." + string(make([]byte, 0))
	for len(name) < 130 {
		name += "abcdefgh."
	}
	id, err := capability.ParseID(name + "x:1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	if s, ok := ToolName(id); ok {
		t.Fatalf("ToolName of a %d-byte name = %q", len(id.Name), s)
	}
}

func FuzzParseToolName(f *testing.F) {
	for _, s := range []string{"org.example.greet.hello_1.0.0", "org.example.a__b_2.0.0-rc.1_build.7", "a___1", "_"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, tool string) {
		id, err := ParseToolName(tool)
		if err != nil {
			return
		}
		back, ok := ToolName(id)
		if !ok || back != tool {
			t.Fatalf("ParseToolName(%q) = %s, which maps to %q", tool, id, back)
		}
	})
}

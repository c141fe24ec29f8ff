package agent

import (
	"go/build"
	"slices"
	"testing"
)

// TestAgentImportsNoBindingNoClientNoAdminSocket: the runtime stays one
// job (threat: an embedder linking the agent drags in a binding, the
// calling side or a socket server it never asked for, and a change there
// reaches the inbound pipeline). What the bindings share with it is in
// package admission; receipts are amp.Receipt; Loopback is the client's.
func TestAgentImportsNoBindingNoClientNoAdminSocket(t *testing.T) {
	pkg, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	const mod = "github.com/ampbundle/ampbundle/"
	for _, banned := range []string{"client", "transport", "transport/amphttp", "transport/ampstcp", "internal/admin"} {
		if slices.Contains(pkg.Imports, mod+banned) {
			t.Errorf("agent imports %s", banned)
		}
	}
	if !slices.Contains(pkg.Imports, mod+"admission") {
		t.Error("agent no longer imports admission: is this test still looking at the right package?")
	}
}

package client

import (
	"errors"
	"os/exec"
	"strings"
	"testing"
)

// TestCallerLinksNoStoreNoSchemaCompilerNoRuntime keeps the promise of the
// package shape: a program that only calls agents (client and a binding's
// client side) links neither the registry's database (bbolt), nor the
// JSON Schema compiler, nor the resolver or the agent runtime. A new
// import that drags one of them in fails here.
func TestCallerLinksNoStoreNoSchemaCompilerNoRuntime(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if errors.Is(err, exec.ErrNotFound) {
		t.Skip("the go tool is not installed")
	}
	if err != nil {
		t.Fatal(err)
	}
	forbidden := []string{
		"go.etcd.io/bbolt",
		"github.com/santhosh-tekuri/jsonschema",
		"github.com/ampbundle/ampbundle/resolver",
		"github.com/ampbundle/ampbundle/agent",
		"github.com/ampbundle/ampbundle/internal/offlineschema",
	}
	for _, pkg := range []string{
		"github.com/ampbundle/ampbundle/client",
		"github.com/ampbundle/ampbundle/transport/amphttp",
		"github.com/ampbundle/ampbundle/transport/ampstcp",
	} {
		t.Run(pkg, func(t *testing.T) {
			out, err := exec.Command(goTool, "list", "-deps", pkg).Output()
			if err != nil {
				t.Fatalf("go list -deps %s: %v", pkg, err)
			}
			deps := strings.Fields(string(out))
			if len(deps) < 2 || deps[len(deps)-1] != pkg {
				t.Fatalf("go list -deps %s listed %d packages, not ending with the package itself", pkg, len(deps))
			}
			for _, d := range deps {
				for _, f := range forbidden {
					if d == f || strings.HasPrefix(d, f+"/") {
						t.Errorf("%s depends on %s", pkg, d)
					}
				}
			}
		})
	}
}

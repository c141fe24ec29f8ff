//go:build unix

package admin_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/ampbundle/ampbundle/internal/admin"
	"github.com/ampbundle/ampbundle/resolver"
)

// A program that holds a store open (`ampagent serve`, `ampagent mcp`)
// serves its admin socket, so that `ampbundle import`, `rm`, `ls`, `trust`
// and `check` reach that store meanwhile.
func ExampleServe() {
	dir, _ := os.MkdirTemp("", "admin-example-")
	defer os.RemoveAll(dir)
	store, err := resolver.Open(filepath.Join(dir, "store.db"), resolver.Options{Create: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer store.Close()

	srv, err := admin.Serve(store, "", nil) // next to the store: store.db.admin.sock
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	fmt.Println(filepath.Base(srv.Path()))
	// Output:
	// store.db.admin.sock
}

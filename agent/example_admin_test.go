//go:build unix

package agent_test

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/ampbundle/ampbundle/agent"
)

// A program that embeds the agent keeps its store open for as long as it
// runs; ServeAdmin lets `ampbundle import`, `rm`, `ls`, `trust` and `check`
// reach that store meanwhile, exactly as they do with `ampagent serve`.
func ExampleServeAdmin() {
	dir, _ := os.MkdirTemp("", "agent-example-admin-")
	defer os.RemoveAll(dir)
	store, err := exampleRegistry(dir, time.Now)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer store.Close()

	adminSrv, err := agent.ServeAdmin(store, "", nil) // next to the store: store.db.admin.sock
	if err != nil {
		fmt.Println(err)
		return
	}
	defer adminSrv.Close()
	// ... then agent.New(agent.Config{Store: store, ...}) and serve it.
	fmt.Println(filepath.Base(adminSrv.Path()))
	// Output:
	// store.db.admin.sock
}

package etcdledger_test

import (
	"fmt"

	"github.com/ampbundle/ampbundle/agent/ledger/etcdledger"
)

// ExampleParseURL reads the --ledger URL of a fleet: its etcd members and
// its key prefix. etcdledger.NewLedger(etcdledger.Options{Endpoints: …,
// Prefix: …, Now: time.Now}) then gives the value for agent.Config.Ledger.
func ExampleParseURL() {
	endpoints, prefix, err := etcdledger.ParseURL("etcd://10.0.0.1:2379,10.0.0.2:2379,10.0.0.3:2379/site-a")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(endpoints, prefix)
	_, prefix, _ = etcdledger.ParseURL("etcd://127.0.0.1:2379")
	fmt.Println(prefix)
	// Output:
	// [10.0.0.1:2379 10.0.0.2:2379 10.0.0.3:2379] /site-a/
	// /ampagent/ledger/
}

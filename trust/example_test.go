package trust_test

import (
	"crypto/ed25519"
	"fmt"
	"time"

	"github.com/ampbundle/ampbundle/trust"
)

// A store's trust is a value: trusting a key and setting a threshold are
// functions of it, and what a store writes is the difference (Effects).
func Example() {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	key := ed25519.NewKeyFromSeed(make([]byte, 32)).Public().(ed25519.PublicKey)
	st := (&trust.State{}).Clone() // an empty store's trust

	st, e, err := trust.AddKey(st, "publisher", key, []string{"org.example."}, 0, now)
	if err != nil {
		panic(err)
	}
	fmt.Println(e.Keys["publisher"].Name, e.Keys["publisher"].Scopes, e.Audit[0].Action)

	_, e, err = trust.SetThreshold(st, "org.example", 2)
	if err != nil {
		panic(err)
	}
	fmt.Println(e.Thresholds, e.Audit[0].Action)

	_, _, err = trust.AddKey(st, "again", key, []string{"*"}, 0, now)
	fmt.Println(err)
	// Output:
	// publisher [org.example] trust_add
	// map[org.example:2] trust_threshold
	// trust_exists: this key is already trusted as publisher
}

package transport_test

import (
	"fmt"

	"github.com/ampbundle/ampbundle/transport"
)

// A binding charges what it holds for a connection to the connection's
// peer: every address of one IPv4 host is one peer, every address of one
// IPv6 /64 too.
func ExamplePeer() {
	fmt.Println(transport.Peer("192.0.2.7:51000"))
	fmt.Println(transport.Peer("[2001:db8:1:2::7]:443"))
	fmt.Println(transport.Peer("[2001:db8:1:2:ffff::1]:80"))
	// Output:
	// 192.0.2.7
	// 2001:db8:1:2::/64
	// 2001:db8:1:2::/64
}

// A server admits at most 4 requests at once, a peer at most 2 of them,
// and refuses at once (never queues) what does not fit.
func ExampleAdmission() {
	adm := transport.NewAdmission(4, 2, 1<<20, 1<<18)
	a := transport.Peer("192.0.2.7:51000")
	fmt.Printf("%q %q %q\n", adm.Enter(a), adm.Enter(a), adm.Enter(a))
	fmt.Println(adm.Charge(a, 1<<18), adm.Charge(a, 1))
	fmt.Printf("%q\n", adm.Enter(transport.Peer("198.51.100.1:443")))
	adm.Leave(a, 1<<18)
	fmt.Printf("%q\n", adm.Enter(a))
	// Output:
	// "" "" "peer_requests"
	// true false
	// ""
	// ""
}

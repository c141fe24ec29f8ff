package transport_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/ampbundle/ampbundle/transport"
)

// A binding marks each request with its peer's address; whoever logs
// about the request through Log names the peer, and the binding then
// knows not to log the same request again.
func Example() {
	ctx := transport.WithRemote(context.Background(), "127.0.0.1:50000")
	fmt.Println("logged before:", transport.Logged(ctx))
	log := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		}}))
	transport.Log(ctx, log).Info("request refused")
	fmt.Println("logged after:", transport.Logged(ctx))
	// Output:
	// logged before: false
	// level=INFO msg="request refused" remote=127.0.0.1:50000
	// logged after: true
}

// A binding charges what it holds for a connection to the connection's
// peer: every address of one IPv4 host is one peer, every address of one
// IPv6 /64 too; a declared body or frame must then arrive at the minimum
// data rate.
func ExamplePeer() {
	fmt.Println(transport.Peer("192.0.2.7:51000"))
	fmt.Println(transport.Peer("[2001:db8:1:2::7]:443"))
	fmt.Println(transport.Peer("[2001:db8:1:2:ffff::1]:80"))
	// 1 MiB declared: 5 s of grace and 8 s at 128 KiB/s; 16 MiB: the
	// binding's 30 s read timeout.
	fmt.Println(transport.DataDeadline(1<<20, 0, 0, 30*time.Second))
	fmt.Println(transport.DataDeadline(16<<20, 0, 0, 30*time.Second))
	// Output:
	// 192.0.2.7
	// 2001:db8:1:2::/64
	// 2001:db8:1:2::/64
	// 13s
	// 30s
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

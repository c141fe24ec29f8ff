package ampstcp_test

import (
	"context"
	"fmt"
	"net"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/transport/ampstcp"
)

// A server on a loopback port and a client transport that sends one
// message and gets the reply that answers it. A real server serves an
// *agent.Agent; this handler only echoes the id back as reply_to.
func Example() {
	h := ampstcp.HandlerFunc(func(ctx context.Context, msg []byte) ([]byte, error) {
		id, _, err := amp.Limits{}.EnvelopeIDs(msg)
		if err != nil {
			return nil, err
		}
		return amp.Marshal(map[string]any{"id": make([]byte, 16), "reply_to": id})
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	srv := ampstcp.NewServer(h, ampstcp.ServerOptions{})
	go srv.Serve(ln)
	defer srv.Close()

	tr, err := ampstcp.NewTransport("amp://"+ln.Addr().String(), ampstcp.ClientOptions{})
	if err != nil {
		panic(err)
	}
	defer tr.Close()
	id := []byte("0123456789abcdef")
	msg, _ := amp.Marshal(map[string]any{"id": id})
	reply, err := tr.RoundTrip(context.Background(), msg)
	if err != nil {
		panic(err)
	}
	_, replyTo, _ := amp.Limits{}.EnvelopeIDs(reply)
	fmt.Printf("%s\n", replyTo)
	// Output: 0123456789abcdef
}

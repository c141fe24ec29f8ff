package agent

import (
	"context"

	"github.com/ampbundle/ampbundle/client"
)

// Loopback is a client.Transport into an Agent in the same process.
func Loopback(a *Agent) client.Transport {
	return client.TransportFunc(func(ctx context.Context, msg []byte) ([]byte, error) { return a.Handle(ctx, msg) })
}

package transport_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"

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

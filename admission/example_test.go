package admission_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/ampbundle/ampbundle/admission"
)

// A binding marks the request with the peer's address; whoever refuses or
// answers it logs through Log, and the binding then knows not to log it
// again.
func Example() {
	ctx := admission.WithRemote(context.Background(), "127.0.0.1:50000")
	fmt.Println("logged before:", admission.Logged(ctx))
	log := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		}}))
	admission.Log(ctx, log).Info("request refused")
	fmt.Println("logged after:", admission.Logged(ctx))
	// Output:
	// logged before: false
	// level=INFO msg="request refused" remote=127.0.0.1:50000
	// logged after: true
}

// One slot: the message of one peer takes it; another peer's message,
// whose caller gives up waiting, is refused with slot_wait_ended and
// holds nothing.
func ExampleFair() {
	f := admission.NewFair(1, admission.DefaultPeerQueue)
	_, done, err := f.Enter(admission.WithPeer(context.Background(), "192.0.2.7"))
	fmt.Println("first:", err)
	ctx, cancel := context.WithTimeout(admission.WithPeer(context.Background(), "198.51.100.1"), time.Millisecond)
	defer cancel()
	_, _, err = f.Enter(ctx)
	fmt.Println("second:", errors.Is(err, admission.ErrSlotWaitEnded))
	done()
	// Output:
	// first: <nil>
	// second: true
}

// A declared body or frame must arrive at the minimum data rate: 1 MiB
// gets 5 s of grace and 8 s at 128 KiB/s; 16 MiB the binding's 30 s read
// timeout.
func ExampleDataDeadline() {
	fmt.Println(admission.DataDeadline(1<<20, 0, 0, 30*time.Second))
	fmt.Println(admission.DataDeadline(16<<20, 0, 0, 30*time.Second))
	// Output:
	// 13s
	// 30s
}

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

// A message waiting for a batched durable write parks: its slot and its
// count against its peer are given back meanwhile. Here the caller keeps
// one message parked and one computing while another peer computes one,
// and a third message of the caller is still admitted at once (a fourth
// slot stays free: the Reserve rule); had the
// first waited with Leave, it would count, and the third would wait for
// the caller's share (fewer inside than the other peer's 1, plus 1).
// resume takes a slot again within the peer's share.
func ExampleFair_Park() {
	f := admission.NewFair(4, admission.DefaultPeerQueue)
	caller := admission.WithPeer(context.Background(), "192.0.2.7")
	first, done1, _ := f.Enter(caller)
	_, other, _ := f.Enter(admission.WithPeer(context.Background(), "198.51.100.1"))
	resume := f.Park(first) // for example, while the ledger's group commit runs
	_, done2, _ := f.Enter(caller)
	ctx, cancel := context.WithTimeout(caller, 50*time.Millisecond)
	defer cancel()
	_, done3, err := f.Enter(ctx)
	fmt.Println("third while the first is parked:", err)
	done3()
	done2()
	other()
	resume()
	done1()
	// Output:
	// third while the first is parked: <nil>
}

package agent

import (
	"context"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/capability"
)

// TestTimeoutMSPastInt64IsTheMaximumNotAWrappedDeadline: a CAP_INVOKE's
// timeout_ms is a uint64; 18,446,744,073,710 ms times a million
// nanoseconds wraps past 2^64 to 448 µs, a positive deadline the caller
// never asked for, and a 20 ms handler timed out (5003). A timeout past
// the agent's maximum is that maximum, whatever its size (CAP-10).
func TestTimeoutMSPastInt64IsTheMaximumNotAWrappedDeadline(t *testing.T) {
	e := newEnv(t, withHandler("org.agentries.code-review:2.1.0", func(ctx context.Context, p any) (any, error) {
		time.Sleep(20 * time.Millisecond)
		return map[string]any{"issues": []any{}, "version": "slow"}, nil
	}))
	cid, err := capability.ParseID("org.agentries.code-review:2.1.0")
	if err != nil {
		t.Fatal(err)
	}
	p, err := amp.Marshal(goodParams)
	if err != nil {
		t.Fatal(err)
	}
	wraps := uint64(18446744073710)
	body := mustEncode(t, capability.Invoke{ID: cid, Params: p, TimeoutMS: &wraps})
	_, reply := e.exchange(e.caller, amp.TypeCapInvoke, body)
	if r := resultOf(t, reply); r.Status != capability.StatusSuccess {
		t.Fatalf("status %s error %+v, want success under the maximum timeout", r.Status, r.Error)
	}
}

package agent

import (
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
)

// TestParamsRefusedForRoomEvictNoWaitingParams: a params STREAM_END that
// is refused for want of room (5004 params_budget_exceeded) leaves every
// waiting params where it was: another unnamed caller's that waited past
// the grace, and the sender's own under the same stream_id (threat: the
// keeper dropped them to make room first, then found the new params did
// not fit anyway; one anonymous STREAM_END of 55 KiB, beside 50 KiB of a
// named caller's in a 100 KiB budget, dropped every other unnamed
// caller's params and got nothing for it).
func TestParamsRefusedForRoomEvictNoWaitingParams(t *testing.T) {
	for _, tc := range []struct {
		name      string
		sender    byte   // of the 55 KiB params (170: the one with 10 KiB waiting under "p")
		peer, sid string // its network, its stream_id
	}{
		{"another caller's params", 171, "198.51.100.7", "q"},
		{"the sender's own params under the same stream_id", 170, "203.0.113.9", "p"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, _, _ := paramsEnv(t, &ParamStreamLimits{MaxBytes: 100 << 10})
			wantAck(t, e.sendParams(t, e.caller, "", "n", bigText(t, 50<<10)), "n", 1)
			wantAck(t, e.sendParams(t, identity(t, 170), "203.0.113.9", "p", bigText(t, 10<<10)), "p", 1)
			e.clock.Add(11 * time.Second) // past the grace: the victim's params may give way
			m := e.sendParams(t, identity(t, tc.sender), tc.peer, tc.sid, bigText(t, 55<<10))
			wantStreamError(t, m, amp.CodeOverloaded, "params_budget_exceeded")
			if n := e.agent.WaitingParams(); n != 2 {
				t.Fatalf("%d params waiting after a refused STREAM_END, want the 2 that waited before", n)
			}
		})
	}
}

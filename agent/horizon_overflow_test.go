package agent

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
)

// TestAHorizonNearTheLargestDurationStillServesFreshMessages: a library
// user keeps every reply "forever" with MaxTTL near the largest
// time.Duration and H = MaxTTL (AGENT-14's retention rule:
// "nothing is refused for age"). pastHorizon adds h + MaxClockSkew and
// expiry adds h + 2 s as Durations: both overflow to negative values.
//
// Every fresh message was refused as older than the replay horizon (and
// the entry's expiry lay in the past). WithDefaults bounds MaxTTL by
// MaxMaxTTL (100 years), and H by MaxTTL: a fresh message runs.
func TestAHorizonNearTheLargestDurationStillServesFreshMessages(t *testing.T) {
	e := newEnv(t, withConfig(func(c *Config) {
		c.MaxTTL = time.Duration(math.MaxInt64)
		c.ReplayHorizon = time.Duration(math.MaxInt64)
	}))
	_, msg := e.sealTTL(e.caller, amp.TypeCapInvoke, invokeBody(t, reviewCap, goodParams), time.Minute)
	out, err := e.agent.Handle(context.Background(), msg)
	must(t, err)
	rep := e.receive(e.caller, out)
	if rep.Type != amp.TypeCapResult {
		eb := errorOf(t, rep)
		t.Fatalf("a fresh message was refused (%d %q) with H = MaxTTL = the largest Duration", eb.Code, eb.Message)
	}
	if n := e.count(reviewCap).Load(); n != 1 {
		t.Fatalf("the handler ran %d times, want 1", n)
	}
}

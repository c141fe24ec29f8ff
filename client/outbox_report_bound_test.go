package client

import (
	"context"
	"runtime"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
)

// TestOutboxDoesNotHoldPeerReportsWithoutBound: a hostile recipient
// answers each message it gets with a PROC_FAIL whose body is as large as
// a message may be (16 MiB by default). Kept whole in Outbound.Report, with
// final entries leaving only when Add finds the outbox full (Max, 65,536
// entries), one peer would make the sender hold up to Max x 16 MiB. Here
// 48 reports of 1 MiB must not stay on the heap: the outbox keeps a
// bounded summary of each report (REPORT-4).
func TestOutboxDoesNotHoldPeerReportsWithoutBound(t *testing.T) {
	p := newParties(t)
	ob := mustOutbox(t, OutboxConfig{Now: p.clock.Now})
	const reports, size = 48, 1 << 20
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := 0; i < reports; i++ {
		m := p.seal(t, p.caller, amp.TypePing, nil)
		if err := ob.Add(m); err != nil {
			t.Fatal(err)
		}
		report := &amp.Message{Type: amp.TypeProcFail, From: p.provider.DID, To: amp.To(p.caller.DID), ReplyTo: m.ID[:],
			Body: make([]byte, size)}
		if !ob.Receive(context.Background(), amp.Receipt{Message: report}) {
			t.Fatalf("report %d not used", i)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if grown := int64(after.HeapAlloc) - int64(before.HeapAlloc); grown > reports*size/4 {
		t.Errorf("the outbox holds %d MiB after %d peer reports of 1 MiB", grown>>20, reports)
	}
	runtime.KeepAlive(ob)
}

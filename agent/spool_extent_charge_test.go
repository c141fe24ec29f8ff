package agent

import (
	"bytes"
	"os"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
)

// spoolBytes is the sum of the lengths of the spool files in dir: what a
// file system without holes (NTFS by default, FAT, exFAT) holds on disk
// for them.
func spoolBytes(t *testing.T, dir string) uint64 {
	t.Helper()
	files, err := os.ReadDir(dir)
	must(t, err)
	var n uint64
	for _, f := range files {
		fi, err := f.Info()
		must(t, err)
		n += uint64(fi.Size())
	}
	return n
}

// TestStalledStreamNeverHoldsASpoolFileLongerThanItsCharge: a
// spooled stream that falls behind its pace is charged what it received
// (STREAM-7), on the ground that its spool file is sparse; but the file
// was extended to the whole total_size at STREAM_START, which a file
// system without holes allocates at once, and a chunk written at the
// end extends it too. With 64 KiB declared and 1 KiB received, the
// stalled stream was charged 1 KiB (or nothing) for a file of 64 KiB:
// one peer's 4 slots held 4 x 64 MiB of such disk on 0 bytes charged,
// the unnamed callers' 192 slots 12 GiB. Now the file is never extended
// ahead of the chunks, and a stalled stream is charged the end of the
// furthest chunk written (STREAM-14): no spool file is ever longer than
// what its stream is charged.
func TestStalledStreamNeverHoldsASpoolFileLongerThanItsCharge(t *testing.T) {
	const kib = 1 << 10
	content := bytes.Repeat([]byte("0123456789abcdef"), 64*kib/16)
	cs := chunks(content, kib)
	for _, c := range []struct {
		name string
		sent []int // chunks sent before the stall
	}{
		{"no chunk", nil},
		{"the first chunk", []int{0}},
		{"the last chunk", []int{len(cs) - 1}},
		{"the first and the last chunk", []int{0, len(cs) - 1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			e, rec := streamEnv(t, StreamLimits{SpoolThreshold: kib, SpoolDir: dir})
			if m := e.send(amp.TypeStreamStart, startBody(t, "s", content, kib)); m != nil {
				t.Fatalf("STREAM_START: %s", errorOf(t, m).Message)
			}
			for _, i := range c.sent {
				if m := e.send(amp.TypeStreamData, dataBody(t, "s", uint64(i), cs[i])); m != nil {
					t.Fatalf("chunk %d: %s", i, errorOf(t, m).Message)
				}
			}
			e.clock.Add(11 * time.Second) // past StallGrace: behind its pace
			e.agent.ReclaimStreams()
			charged := func() uint64 {
				e.agent.streams.mu.Lock()
				defer e.agent.streams.mu.Unlock()
				return e.agent.streams.inFlight
			}
			if disk, ch := spoolBytes(t, dir), charged(); disk > ch {
				t.Fatalf("stalled stream: spool files of %d bytes, %d charged", disk, ch)
			}
			if ch := charged(); ch >= uint64(len(content)) && len(c.sent) == 1 && c.sent[0] == 0 {
				t.Fatalf("a stream stalled after its first chunk is still charged %d bytes", ch)
			}
			// The rest arrives: every chunk is charged before it is written.
			for i := range cs {
				if m := e.send(amp.TypeStreamData, dataBody(t, "s", uint64(i), cs[i])); m != nil {
					t.Fatalf("chunk %d after the stall: %s", i, errorOf(t, m).Message)
				}
				if disk, ch := spoolBytes(t, dir), charged(); disk > ch {
					t.Fatalf("after chunk %d: spool files of %d bytes, %d charged", i, disk, ch)
				}
			}
			wantAck(t, e.send(amp.TypeStreamEnd, endBody(t, "s", content)), "s", uint64(len(cs)))
			if !bytes.Equal(rec.got["s"], content) {
				t.Fatal("content differs")
			}
		})
	}
}

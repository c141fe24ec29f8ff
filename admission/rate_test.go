package admission

import (
	"testing"
	"time"
)

// TestDataDeadlineScalesWithTheDeclaredSize: a small message gets about
// the grace only, a larger one 8 s per MiB more, never past the limit
// (threat: a declared 16 MiB frame held for the whole read timeout with
// nothing sent).
func TestDataDeadlineScalesWithTheDeclaredSize(t *testing.T) {
	for _, tc := range []struct {
		n     int64
		rate  int64
		limit time.Duration
		want  time.Duration
	}{
		{1 << 10, 0, 30 * time.Second, FrameGrace + 7812500*time.Nanosecond},
		{1 << 20, 0, 30 * time.Second, FrameGrace + 8*time.Second},
		{16 << 20, 0, 30 * time.Second, 30 * time.Second},
		{16 << 20, 1 << 20, 10 * time.Second, 10 * time.Second},
		{4 << 20, 2 << 20, 0, FrameGrace + 2*time.Second},
		// Sizes whose nanoseconds overflow int64 (a huge bundle at a low
		// rate) saturate instead of wrapping to a deadline in the past.
		{16 << 30, 1, 0, time.Duration(1<<63 - 1)},
		{1<<63 - 1, 1 << 17, 0, time.Duration(1<<63 - 1)},
		{16 << 30, 1 << 17, 0, FrameGrace + 131072*time.Second},
		{1<<63 - 1, 1 << 17, time.Hour, time.Hour},
		// A negative count is no bytes: the grace, never a wrapped or
		// negative deadline.
		{-1, 0, 0, FrameGrace},
		{-1 << 63, 1, 0, FrameGrace},
	} {
		if got := DataDeadline(tc.n, tc.rate, 0, tc.limit); got != tc.want {
			t.Errorf("DataDeadline(%d, %d, %v) = %v, want %v", tc.n, tc.rate, tc.limit, got, tc.want)
		}
	}
}

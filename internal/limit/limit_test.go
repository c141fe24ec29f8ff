package limit

import (
	"testing"
	"time"
)

// A negative or zero bound must never reach the code it bounds (a zero
// cap refuses everything, a negative one wraps to huge when converted);
// a positive one is the caller's and is kept.
func TestUnsetOrNegativeBoundTakesItsDefault(t *testing.T) {
	for _, tc := range []struct{ in, want int }{{0, 64}, {-1, 64}, {-1 << 62, 64}, {1, 1}, {1 << 40, 1 << 40}} {
		got := tc.in
		Default(&got, 64)
		if got != tc.want {
			t.Errorf("Default(%d, 64) = %d, want %d", tc.in, got, tc.want)
		}
	}
	d := -time.Second
	Default(&d, 30*time.Second)
	if d != 30*time.Second {
		t.Errorf("a negative duration became %v, want 30s", d)
	}
	var u uint64
	Default(&u, 256<<20)
	if u != 256<<20 {
		t.Errorf("an unset uint64 became %d, want %d", u, 256<<20)
	}
	f := 0.5
	Default(&f, 1024)
	if f != 0.5 {
		t.Errorf("a positive fraction became %v, want it kept", f)
	}
}

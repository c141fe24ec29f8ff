package bundlebuild

import (
	"errors"
	"io"
	"slices"
	"testing"
)

// shortWriter takes at most take bytes of a write, then fails with err.
type shortWriter struct {
	take int
	err  error
	got  []byte
}

func (w *shortWriter) Write(b []byte) (int, error) {
	n := min(len(b), w.take)
	w.got = append(w.got, b[:n]...)
	if n < len(b) {
		return n, w.err
	}
	return n, nil
}

// TestCountingWriterWhoseWriterFailsCountsOnlyWhatItTook: every writer of
// bundle files (split, build, export, join, the demo's build) counts
// through CountingWriter, and the size it prints or checks is N. A
// write the file took only in part must count what was taken, not what
// was offered (threat: a size that says more than the file holds), the
// file's error must come back as it is, and a writer without Progress
// (build, the demo) must not fail for it.
func TestCountingWriterWhoseWriterFailsCountsOnlyWhatItTook(t *testing.T) {
	full := errors.New("disk full")
	tests := []struct {
		name     string
		take     int
		progress bool
		writes   []string
		wantN    int64
		wantErr  error
		reported []int64
	}{
		{"whole writes, progress", 100, true, []string{"abc", "de"}, 5, nil, []int64{3, 5}},
		{"whole writes, no progress", 100, false, []string{"abc", "de"}, 5, nil, nil},
		{"short write, progress", 4, true, []string{"abc", "de"}, 4, full, []int64{3, 4}},
		{"short write, no progress", 1, false, []string{"abc"}, 1, full, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sw := &shortWriter{take: tt.take, err: full}
			var reported []int64
			cw := &CountingWriter{W: sw}
			if tt.progress {
				cw.Progress = func(n int64) { reported = append(reported, n) }
			}
			var err error
			for _, s := range tt.writes {
				var n int
				n, err = cw.Write([]byte(s))
				sw.take -= n
				if err != nil {
					break
				}
			}
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("error %v, want %v", err, tt.wantErr)
			}
			if cw.N != tt.wantN || int64(len(sw.got)) != tt.wantN {
				t.Fatalf("N = %d, the writer took %d bytes; want both %d", cw.N, len(sw.got), tt.wantN)
			}
			if !slices.Equal(reported, tt.reported) {
				t.Fatalf("progress reported %v, want %v", reported, tt.reported)
			}
		})
	}
	// Through io.Copy, as join and export use it: N is the bytes copied.
	cw := &CountingWriter{W: io.Discard}
	if n, err := io.Copy(cw, io.LimitReader(zeros{}, 1<<20+7)); err != nil || n != cw.N || cw.N != 1<<20+7 {
		t.Fatalf("io.Copy: %d %v, N = %d; want %d", n, err, cw.N, 1<<20+7)
	}
}

// zeros reads as endless zero bytes.
type zeros struct{}

func (zeros) Read(b []byte) (int, error) { clear(b); return len(b), nil }

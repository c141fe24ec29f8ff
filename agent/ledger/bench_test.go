package ledger

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// benchLedger runs Start, Running and Finish (a 500-byte reply) for
// distinct keys from callers concurrent callers (64 senders): the
// ledger's own cost, without the agent's.
func benchLedger(b *testing.B, callers int, store func(b *testing.B, c *clock) Store) {
	c := newClock()
	l, err := New(store(b, c), Options{Now: c.Now})
	if err != nil {
		b.Fatal(err)
	}
	reply := bytes.Repeat([]byte{7}, 500)
	var next atomic.Int64
	b.SetParallelism(max((callers+runtime.GOMAXPROCS(0)-1)/runtime.GOMAXPROCS(0), 1))
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := int(next.Add(1))
			st, err := l.Start(fmt.Sprintf("did:key:z%04d", i%64), id(i), c.Now().Add(time.Hour))
			if err != nil || st.State != Fresh {
				b.Fatal(st.State, err)
			}
			if err := st.Ticket.Running(); err != nil {
				b.Fatal(err)
			}
			if err := st.Ticket.Finish(reply); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkLedgerWAL: the write-ahead log, 64 callers.
func BenchmarkLedgerWAL(b *testing.B) { benchLedgerWAL(b, 64) }

// BenchmarkLedgerWAL256: the write-ahead log, 256 callers.
func BenchmarkLedgerWAL256(b *testing.B) { benchLedgerWAL(b, 256) }

func benchLedgerWAL(b *testing.B, callers int) {
	benchLedger(b, callers, func(b *testing.B, c *clock) Store {
		s, err := OpenWAL(filepath.Join(b.TempDir(), "l"), WALOptions{Now: c.Now})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() {
			b.ReportMetric(float64(s.groups.Load()), "groups")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(max(s.groups.Load(), 1)), "ns/group")
			s.Close()
		})
		return s
	})
}

// BenchmarkLedgerMemory: the memory store, 64 callers.
func BenchmarkLedgerMemory(b *testing.B) {
	benchLedger(b, 64, func(*testing.B, *clock) Store { return NewMemory(Limits{}) })
}

// BenchmarkLedgerMemory256: the memory store, 256 callers.
func BenchmarkLedgerMemory256(b *testing.B) {
	benchLedger(b, 256, func(*testing.B, *clock) Store { return NewMemory(Limits{}) })
}

// BenchmarkAppendSyncPrimitive: what one group cannot avoid, serially:
// append 2,560 bytes (about 32 records of the benchmark above) to a file
// and fdatasync it. A WAL group (ns/group of BenchmarkLedgerWAL) is
// compared with this in the same run.
func BenchmarkAppendSyncPrimitive(b *testing.B) {
	f, err := os.Create(filepath.Join(b.TempDir(), "f"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	buf := bytes.Repeat([]byte{7}, 2560)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := f.Write(buf); err != nil {
			b.Fatal(err)
		}
		if err := fdatasync(f); err != nil {
			b.Fatal(err)
		}
	}
}

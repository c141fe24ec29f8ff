package etcdledger_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/agent"
	"github.com/ampbundle/ampbundle/agent/ledger/etcdledger"
	"github.com/ampbundle/ampbundle/agent/ledger/etcdledger/etcdtest"
	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/capability"
	"github.com/ampbundle/ampbundle/resolver"
)

// benchCallers and benchPerCaller size one round of the benchmark: 64
// callers, each with its own identity (and its own quota principal: the
// policy names each), sending benchPerCaller invocations one after the
// other.
const (
	benchCallers   = 64
	benchPerCaller = 4
)

// BenchmarkFleetInvocations: 64 callers against one agent with the local
// write-ahead log, the same agent with a 3-member etcd, and three agents
// sharing it (round robin); invocations/s, p50 and p99 of one round.
func BenchmarkFleetInvocations(b *testing.B) {
	callers := make([]amp.Identity, benchCallers)
	var rules agent.Rules
	for i := range callers {
		callers[i] = identity(b, byte(100+i))
		rules = append(rules, agent.Rule{Caller: callers[i].DID, Prefix: "org.example."})
	}
	ok := func(ctx context.Context, params any) (any, error) { return map[string]any{"ok": true}, nil }
	b.Run("wal-1-agent", func(b *testing.B) {
		benchRound(b, []*agent.Agent{benchAgent(b, filepath.Join(b.TempDir(), "wal"), nil, rules, ok)}, callers)
	})
	c := etcdtest.Start(b, 3)
	for _, n := range []int{1, 3} {
		b.Run(fmt.Sprintf("etcd3-%d-agents", n), func(b *testing.B) {
			var agents []*agent.Agent
			var stores []*etcdledger.Store
			prefix := fmt.Sprintf("/bench%d-%d/", n, time.Now().UnixNano())
			for i := 0; i < n; i++ {
				a, st := benchAgentStore(b, filepath.Join(b.TempDir(), fmt.Sprint(i)), &etcdledger.Options{Endpoints: c.Endpoints(), Prefix: prefix}, rules, ok)
				agents, stores = append(agents, a), append(stores, st)
			}
			benchRound(b, agents, callers)
			// The etcd calls (transactions, reads, lease grants) per
			// invocation: 3 writes each when none is combined (FLEET-10).
			var calls uint64
			var spent time.Duration
			for _, st := range stores {
				calls += st.Stats().Calls
				spent += st.Stats().Latency
			}
			b.ReportMetric(float64(calls)/float64(b.N*benchCallers*benchPerCaller), "etcd-calls/inv")
			b.ReportMetric(float64(spent.Microseconds())/1000/float64(max(calls, 1)), "ms/etcd-call")
		})
	}
}

// benchAgent is an agent over a registry in dir: its ledger on etcd with
// o, else the write-ahead log beside the registry.
func benchAgent(b *testing.B, dir string, o *etcdledger.Options, rules agent.Rules, h agent.Handler) *agent.Agent {
	a, _ := benchAgentStore(b, dir, o, rules, h)
	return a
}

// benchAgentStore is benchAgent, with its etcd store (nil for the log).
func benchAgentStore(b *testing.B, dir string, o *etcdledger.Options, rules agent.Rules, h agent.Handler) (*agent.Agent, *etcdledger.Store) {
	b.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		b.Fatal(err)
	}
	reg, err := resolver.Open(filepath.Join(dir, "store.db"), resolver.Options{Now: time.Now, Create: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { reg.Close() })
	if err := reg.TrustAdd("fleet", seedKey(21).Public().(ed25519.PublicKey), []string{"org.example"}); err != nil {
		b.Fatal(err)
	}
	if _, err := reg.Import(context.Background(), bytes.NewReader(fleetBundle(b)), resolver.ImportOptions{}); err != nil {
		b.Fatal(err)
	}
	cfg := agent.Config{Core: agent.Core{Identity: identity(b, 30), Store: reg, Now: time.Now, Rand: rand.Reader,
		Handlers: map[string]agent.Handler{capID: h}, Policy: rules}}
	var st *etcdledger.Store
	if o != nil {
		o.Now = time.Now
		if cfg.Ledger, err = etcdledger.NewLedger(*o); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { cfg.Ledger.Close() })
		st = cfg.Ledger.Store().(*etcdledger.Store)
	}
	a, err := agent.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { a.Close() })
	return a, st
}

// benchRound runs b.N rounds: every caller sends its invocations (sealed
// before the clock starts) to the agents in turn.
func benchRound(b *testing.B, agents []*agent.Agent, callers []amp.Identity) {
	cid, _ := capability.ParseID(capID)
	body, err := capability.Invoke{ID: cid, Params: []byte{0xa0}}.Encode()
	if err != nil {
		b.Fatal(err)
	}
	var lat []time.Duration
	var total time.Duration
	for i := 0; i < b.N; i++ {
		msgs := make([][][]byte, len(callers))
		for c, id := range callers {
			s, err := amp.NewSender(amp.SenderConfig{Identity: id, Rand: rand.Reader, Now: time.Now})
			if err != nil {
				b.Fatal(err)
			}
			for j := 0; j < benchPerCaller; j++ {
				_, m, err := s.Seal(context.Background(), amp.Draft{Type: amp.TypeCapInvoke, To: amp.To(identity(b, 30).DID), Body: body, TTL: time.Minute})
				if err != nil {
					b.Fatal(err)
				}
				msgs[c] = append(msgs[c], m)
			}
		}
		var mu sync.Mutex
		var wg sync.WaitGroup
		start := time.Now()
		for c := range callers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j, m := range msgs[c] {
					t0 := time.Now()
					if _, err := agents[(c+j)%len(agents)].Handle(context.Background(), m); err != nil {
						b.Error(err)
						return
					}
					mu.Lock()
					lat = append(lat, time.Since(t0))
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		total += time.Since(start)
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(len(lat))/total.Seconds(), "inv/s")
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	b.ReportMetric(0, "ns/op")
}

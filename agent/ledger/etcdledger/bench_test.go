package etcdledger_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"slices"
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

// benchCallers and benchPerCaller size the benchmark: 64 callers, each
// with its own identity (and its own quota principal: the policy names
// each), sending b.N × benchPerCaller invocations one after the other.
const (
	benchCallers   = 64
	benchPerCaller = 4
	// benchTTL is the messages' ttl (sealed before the clock starts).
	benchTTL = time.Minute
)

// BenchmarkFleetInvocations: 64 callers against one agent with the local
// write-ahead log, the same agent with a 3-member etcd, and three agents
// sharing it (round robin); invocations/s, p50 and p99 of the timed part,
// the CPU each side used per invocation, and for etcd its calls per
// invocation and their mean duration.
func BenchmarkFleetInvocations(b *testing.B) {
	callers := make([]amp.Identity, benchCallers)
	var rules agent.Rules
	for i := range callers {
		callers[i] = identity(b, byte(100+i))
		rules = append(rules, agent.Rule{Caller: callers[i].DID, Prefix: "org.example."})
	}
	ok := func(ctx context.Context, params any) (any, error) { return map[string]any{"ok": true}, nil }
	b.Run("wal-1-agent", func(b *testing.B) {
		a := benchAgent(b, filepath.Join(b.TempDir(), "wal"), nil, rules, ok)
		benchRun(b, []*agent.Agent{a}, callers, nil, nil)
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
			sum := func() (st etcdledger.Stats) {
				for _, x := range stores {
					st.Calls += x.Stats().Calls
					st.Latency += x.Stats().Latency
				}
				return st
			}
			var start etcdledger.Stats
			benchRun(b, agents, callers, c, func(timed bool) {
				if !timed {
					start = sum()
					return
				}
				// The etcd calls (transactions, reads, lease grants) per
				// invocation: 3 writes each when none is combined (FLEET-10).
				st := sum()
				calls := st.Calls - start.Calls
				b.ReportMetric(float64(calls)/float64(b.N*benchCallers*benchPerCaller), "etcd-calls/inv")
				b.ReportMetric(float64((st.Latency-start.Latency).Microseconds())/1000/float64(max(calls, 1)), "ms/etcd-call")
			})
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

// benchRun times b.N × benchPerCaller invocations of every caller (sealed
// before the clock starts), each caller's one after the other, to the
// agents in turn, all callers at once; before them, untimed, one
// invocation of each caller warms the agents up (connections, etcd's
// session and bucket leases), so that the timed part, even of one round
// (-benchtime 1x, 256 invocations), leaves start-up out. The messages
// live benchTTL: a run longer than that is refused (a smaller
// -benchtime). mark, when set, is called
// just before the timed part (false) and just after it (true). With c
// set, the CPU time its members and this process used in the timed part
// is reported per invocation (where it can be read: Linux).
func benchRun(b *testing.B, agents []*agent.Agent, callers []amp.Identity, c *etcdtest.Cluster, mark func(timed bool)) {
	cid, _ := capability.ParseID(capID)
	body, err := capability.Invoke{ID: cid, Params: []byte{0xa0}}.Encode()
	if err != nil {
		b.Fatal(err)
	}
	n := b.N * benchPerCaller
	to := amp.To(identity(b, 30).DID)
	msgs := make([][][]byte, len(callers))
	for i, id := range callers {
		s, err := amp.NewSender(amp.SenderConfig{Identity: id, Rand: rand.Reader, Now: time.Now})
		if err != nil {
			b.Fatal(err)
		}
		for j := 0; j <= n; j++ { // the first warms up
			_, m, err := s.Seal(context.Background(), amp.Draft{Type: amp.TypeCapInvoke, To: to, Body: body, TTL: benchTTL})
			if err != nil {
				b.Fatal(err)
			}
			msgs[i] = append(msgs[i], m)
		}
	}
	send := func(from, to int, lat [][]time.Duration) {
		var wg sync.WaitGroup
		for i := range callers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := from; j < to; j++ {
					t0 := time.Now()
					if _, err := agents[(i+j)%len(agents)].Handle(context.Background(), msgs[i][j]); err != nil {
						b.Error(err)
						return
					}
					if lat != nil {
						lat[i] = append(lat[i], time.Since(t0))
					}
				}
			}()
		}
		wg.Wait()
	}
	send(0, 1, nil)
	if mark != nil {
		mark(false)
	}
	lat := make([][]time.Duration, len(callers))
	etcd0, okE := cpuOf(c)
	self0, okS := etcdtest.SelfCPU()
	b.ResetTimer()
	start := time.Now()
	send(1, n+1, lat)
	total := time.Since(start)
	b.StopTimer()
	if total > benchTTL*3/4 {
		b.Fatalf("the timed part took %s, near the messages' ttl (%s): run fewer rounds", total, benchTTL)
	}
	etcd1, _ := cpuOf(c)
	self1, _ := etcdtest.SelfCPU()
	all := slices.Concat(lat...)
	if len(all) == 0 {
		b.Fatal("no invocation answered")
	}
	slices.Sort(all)
	b.ReportMetric(float64(len(all))/total.Seconds(), "inv/s")
	b.ReportMetric(float64(all[len(all)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(all[len(all)*99/100].Microseconds())/1000, "p99-ms")
	perInv := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(len(all)) }
	if okS {
		b.ReportMetric(perInv(self1-self0), "agent-cpu-ms/inv")
	}
	if c != nil && okE {
		b.ReportMetric(perInv(etcd1-etcd0), "etcd-cpu-ms/inv")
	}
	b.ReportMetric(0, "ns/op")
	if mark != nil {
		mark(true)
	}
}

// cpuOf is the CPU time of c's members (ok false without c).
func cpuOf(c *etcdtest.Cluster) (time.Duration, bool) {
	if c == nil {
		return 0, false
	}
	return c.CPU()
}

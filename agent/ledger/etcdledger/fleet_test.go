package etcdledger_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/agent"
	"github.com/ampbundle/ampbundle/agent/ledger/etcdledger"
	"github.com/ampbundle/ampbundle/agent/ledger/etcdledger/etcdtest"
	"github.com/ampbundle/ampbundle/amp"
)

// newFleet starts n agents sharing the cluster under prefix, each with
// handler h.
func newFleet(t *testing.T, c *etcdtest.Cluster, n int, prefix string, h agent.Handler) []*node {
	t.Helper()
	var nodes []*node
	for i := 0; i < n; i++ {
		nodes = append(nodes, newNode(t, filepath.Join(t.TempDir(), fmt.Sprint(i)), c.Endpoints(), prefix, etcdledger.Options{}, h))
	}
	return nodes
}

// A retried CAP_INVOKE that lands on every node of the fleet at once (a
// load balancer's retries) runs its handler once, and every copy gets the
// byte-identical reply.
func TestFleetFiftyCopiesAcrossThreeAgentsRunHandlerOnce(t *testing.T) {
	c := etcdtest.Start(t, 3)
	var runs atomic.Int64
	slow := func(ctx context.Context, params any) (any, error) {
		time.Sleep(100 * time.Millisecond) // copies arrive while it runs
		return counting(&runs)(ctx, params)
	}
	nodes := newFleet(t, c, 3, "/fifty/", slow)
	_, msg := invoke(t, map[string]any{"job": "once"}, time.Minute)
	replies := make([][]byte, 50)
	var wg sync.WaitGroup
	for i := range replies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// A hang guard: fifty copies on a three-member cluster,
			// under -race on a loaded machine, may take seconds.
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			r, err := nodes[i%3].agent.Handle(ctx, msg) // round robin
			if err != nil {
				t.Errorf("copy %d: %v", i, err)
			}
			replies[i] = r
		}()
	}
	wg.Wait()
	if n := runs.Load(); n != 1 {
		t.Fatalf("handler ran %d times for one message, want 1", n)
	}
	if e := resultError(t, open(t, replies[0])); e != nil {
		t.Fatalf("reply is an error: %d %s", e.Code, e.Message)
	}
	for i, r := range replies {
		if !bytes.Equal(r, replies[0]) {
			t.Fatalf("copy %d (node %d) got other reply bytes than copy 0", i, i%3)
		}
	}
}

// envChild marks the test binary re-executed as the node that is killed.
const envChild = "ETCDLEDGER_TEST_CHILD"

// A node killed (SIGKILL) while its handler runs leaves the entry running;
// once its session lease expires, every node answers the message's copies
// "outcome unknown" and none runs the handler again.
func TestKilledRunnerNeverRunsAgainOnAnyNode(t *testing.T) {
	if dir := os.Getenv(envChild); dir != "" {
		runChild(t, dir)
		return
	}
	c := etcdtest.Start(t, 3)
	dir := t.TempDir()
	_, msg := invoke(t, map[string]any{"job": "killed"}, time.Minute)
	if err := os.WriteFile(filepath.Join(dir, "msg"), msg, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "endpoints"), []byte(c.URL("killed")), 0o600); err != nil {
		t.Fatal(err)
	}
	child := exec.Command(os.Args[0], "-test.run=^TestKilledRunnerNeverRunsAgainOnAnyNode$", "-test.count=1")
	child.Env = append(os.Environ(), envChild+"="+dir)
	out, _ := os.Create(filepath.Join(dir, "child.log"))
	defer out.Close()
	child.Stdout, child.Stderr = out, out
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer child.Process.Kill()
	marker := filepath.Join(dir, "running")
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(marker); err == nil {
			break
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(dir, "child.log"))
			t.Fatalf("the child node never ran its handler: %s", log)
		}
	}
	if err := child.Process.Kill(); err != nil { // kill -9 while the handler runs
		t.Fatal(err)
	}
	_ = child.Wait()
	var runs atomic.Int64
	nodes := newFleet(t, c, 3, "/killed/", counting(&runs))
	replies := make([][]byte, 9)
	var wg sync.WaitGroup
	for i := range replies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			r, err := nodes[i%3].agent.Handle(ctx, msg)
			if err != nil {
				t.Errorf("copy %d: %v", i, err)
			}
			replies[i] = r
		}()
	}
	wg.Wait()
	if n := runs.Load(); n != 0 {
		t.Fatalf("handler ran %d times on the fleet after its runner was killed, want 0", n)
	}
	e := resultError(t, open(t, replies[0]))
	if e == nil || e.Name != "outcome_unknown" {
		t.Fatalf("copy 0 is %+v, want outcome_unknown", e)
	}
	for i, r := range replies {
		if !bytes.Equal(r, replies[0]) {
			t.Fatalf("copy %d got other reply bytes than copy 0", i)
		}
	}
}

// runChild is the killed node: its handler marks that it runs and blocks.
func runChild(t *testing.T, dir string) {
	url, err := os.ReadFile(filepath.Join(dir, "endpoints"))
	if err != nil {
		t.Fatal(err)
	}
	endpoints, prefix, err := etcdledger.ParseURL(string(url))
	if err != nil {
		t.Fatal(err)
	}
	block := func(ctx context.Context, params any) (any, error) {
		_ = os.WriteFile(filepath.Join(dir, "running"), nil, 0o600)
		select {} // until killed
	}
	n := newNode(t, filepath.Join(dir, "child"), endpoints, prefix, etcdledger.Options{SessionTTL: 2 * time.Second}, block)
	msg, err := os.ReadFile(filepath.Join(dir, "msg"))
	if err != nil {
		t.Fatal(err)
	}
	_, _ = n.agent.Handle(context.Background(), msg)
	t.Fatal("the child's handler returned")
}

// With the etcd leader killed under load, no handler runs twice, every
// refusal is retryable (or "outcome unknown" for a handler whose result
// could not be recorded), and the fleet serves again after the election.
func TestLeaderStoppedUnderLoadNeverRunsTwice(t *testing.T) {
	c := etcdtest.Start(t, 3)
	var mu sync.Mutex
	runs := map[string]int{}
	h := func(ctx context.Context, params any) (any, error) {
		p, _ := params.(map[string]any)
		mu.Lock()
		runs[fmt.Sprint(p["job"])]++
		mu.Unlock()
		return map[string]any{"ok": true}, nil
	}
	nodes := newFleet(t, c, 3, "/leader/", h)
	var ok, retryable, unknown, afterKill atomic.Int64
	var killed atomic.Bool
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				_, msg := invoke(t, map[string]any{"job": fmt.Sprintf("%d-%d", w, i)}, time.Minute)
				for try := 0; try < 50; try++ {
					ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
					raw, err := nodes[(w+i+try)%3].agent.Handle(ctx, msg)
					cancel()
					if err != nil {
						t.Errorf("handle: %v", err)
						return
					}
					e := resultError(t, open(t, raw))
					switch {
					case e == nil:
						ok.Add(1)
						if killed.Load() {
							afterKill.Add(1)
						}
					case e.Name == "outcome_unknown":
						unknown.Add(1)
					case e.Code.Retryable():
						retryable.Add(1)
						time.Sleep(50 * time.Millisecond)
						continue
					default:
						t.Errorf("a refusal that is not retryable: %d %s", e.Code, e.Message)
					}
					break
				}
			}
		}()
	}
	stopped := false
	defer func() {
		if !stopped {
			close(stop)
			wg.Wait()
		}
	}()
	eventually(t, "an invocation served before the kill", func() bool { return ok.Load() > 0 })
	leader := c.WaitLeader(etcdtest.Settle)
	c.Kill(leader)
	killed.Store(true)
	c.WaitLeader(etcdtest.Settle)
	// The fleet serves again once its clients found the new leader: as
	// soon as an invocation succeeds, not after a fixed time.
	eventually(t, "an invocation served after the leader was killed", func() bool { return afterKill.Load() > 0 })
	close(stop)
	stopped = true
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	for job, n := range runs {
		if n > 1 {
			t.Fatalf("job %s ran %d times", job, n)
		}
	}
	t.Logf("ok %d, retryable refusals %d, outcome unknown %d, ok after the kill %d", ok.Load(), retryable.Load(), unknown.Load(), afterKill.Load())
	if afterKill.Load() == 0 {
		t.Fatal("no invocation succeeded after the leader was killed")
	}
}

// An etcd that cannot be reached refuses the invocation before its
// handler runs, with a retryable 5002.
func TestUnreachableEtcdRefusesBeforeHandlerRetryably(t *testing.T) {
	var runs atomic.Int64
	n := newNode(t, t.TempDir(), []string{"127.0.0.1:1"}, "/none/", etcdledger.Options{OpTimeout: 300 * time.Millisecond}, counting(&runs))
	_, msg := invoke(t, map[string]any{"job": "x"}, time.Minute)
	raw, err := n.agent.Handle(context.Background(), msg)
	if err != nil {
		t.Fatal(err)
	}
	e := resultError(t, open(t, raw))
	if e == nil || e.Code != amp.CodeUnavailable || !e.Code.Retryable() {
		t.Fatalf("reply %+v, want a retryable 5002", e)
	}
	if runs.Load() != 0 {
		t.Fatal("the handler ran without a record")
	}
}

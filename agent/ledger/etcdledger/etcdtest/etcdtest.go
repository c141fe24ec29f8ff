// Package etcdtest starts a real etcd cluster on loopback for tests: the
// members are etcd processes (the binary scripts/ci-etcd.sh installs),
// with their data in the test's temporary directory. A test that cannot
// find the binary fails, naming the script; nothing is faked.
package etcdtest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// EnvBinary names the etcd binary when set; else etcd on PATH, then
// /usr/bin/etcd, then the cache scripts/ci-etcd.sh builds into.
const EnvBinary = "AMP_ETCD_BIN"

// Binary returns the etcd binary's path, or an error naming the setup
// script.
func Binary() (string, error) {
	if p := os.Getenv(EnvBinary); p != "" {
		return p, nil
	}
	if p, err := exec.LookPath("etcd"); err == nil {
		return p, nil
	}
	for _, p := range []string{"/usr/bin/etcd", filepath.Join(os.Getenv("HOME"), ".cache", "ampbundle-etcd", "bin", "etcd")} {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("no etcd binary: run scripts/ci-etcd.sh (installs Debian's etcd-server), or set %s", EnvBinary)
}

// Member is one etcd process.
type Member struct {
	Name   string
	Client string // host:port of its client URL
	peer   string
	dir    string
	cmd    *exec.Cmd
	done   chan struct{}
}

// Cluster is a running cluster.
type Cluster struct {
	t       testing.TB
	bin     string
	Members []*Member
	initial string
}

// Start starts an n-member cluster and waits until it has a leader. The
// members stop when the test ends.
func Start(t testing.TB, n int) *Cluster {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		t.Fatal(err)
	}
	c := &Cluster{t: t, bin: bin}
	root := t.TempDir()
	var initial []string
	for i := 0; i < n; i++ {
		m := &Member{Name: fmt.Sprintf("m%d", i), Client: freeAddr(t), peer: freeAddr(t), dir: filepath.Join(root, fmt.Sprintf("m%d", i))}
		c.Members = append(c.Members, m)
		initial = append(initial, m.Name+"=http://"+m.peer)
	}
	c.initial = strings.Join(initial, ",")
	for i := range c.Members {
		c.start(i, "new")
	}
	t.Cleanup(func() {
		for i := range c.Members {
			c.Kill(i)
		}
	})
	c.WaitLeader(20 * time.Second)
	return c
}

// freeAddr returns a loopback address with a free port.
func freeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func (c *Cluster) start(i int, state string) {
	c.t.Helper()
	m := c.Members[i]
	log, err := os.OpenFile(m.dir+".log", os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		c.t.Fatal(err)
	}
	defer log.Close()
	cmd := exec.Command(c.bin, "--name", m.Name, "--data-dir", m.dir,
		"--listen-client-urls", "http://"+m.Client, "--advertise-client-urls", "http://"+m.Client,
		"--listen-peer-urls", "http://"+m.peer, "--initial-advertise-peer-urls", "http://"+m.peer,
		"--initial-cluster", c.initial, "--initial-cluster-state", state, "--initial-cluster-token", "amptest",
		"--heartbeat-interval", "50", "--election-timeout", "500", "--snapshot-count", "100000",
		"--logger", "zap", "--log-level", "warn")
	cmd.Stdout, cmd.Stderr = log, log
	ownProcessGroup(cmd)
	if err := cmd.Start(); err != nil {
		c.t.Fatalf("start etcd: %v", err)
	}
	m.cmd, m.done = cmd, make(chan struct{})
	go func(done chan struct{}) { _ = cmd.Wait(); close(done) }(m.done)
}

// Endpoints are the members' client addresses.
func (c *Cluster) Endpoints() []string {
	var e []string
	for _, m := range c.Members {
		e = append(e, m.Client)
	}
	return e
}

// URL is the cluster as an etcd:// ledger URL with prefix.
func (c *Cluster) URL(prefix string) string {
	return "etcd://" + strings.Join(c.Endpoints(), ",") + "/" + prefix
}

// Client returns a client of the cluster, closed when the test ends.
func (c *Cluster) Client() *clientv3.Client {
	c.t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { cli.Close() })
	return cli
}

// Kill stops member i at once (SIGKILL), if it runs.
func (c *Cluster) Kill(i int) {
	m := c.Members[i]
	if m.cmd == nil {
		return
	}
	_ = m.cmd.Process.Kill()
	<-m.done
	m.cmd = nil
}

// Restart starts member i again on its data.
func (c *Cluster) Restart(i int) { c.start(i, "existing") }

// Leader returns the index of the member that is leader, or -1.
func (c *Cluster) Leader() int {
	for i, m := range c.Members {
		if m.cmd == nil {
			continue
		}
		cli, err := clientv3.New(clientv3.Config{Endpoints: []string{m.Client}, DialTimeout: time.Second, Logger: zap.NewNop()})
		if err != nil {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		st, err := cli.Status(ctx, m.Client)
		cancel()
		cli.Close()
		if err == nil && st.Leader != 0 && st.Leader == st.Header.MemberId {
			return i
		}
	}
	return -1
}

// WaitLeader waits until a member is leader, or fails the test.
func (c *Cluster) WaitLeader(within time.Duration) int {
	c.t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if i := c.Leader(); i >= 0 {
			return i
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.t.Fatalf("etcd cluster has no leader after %s (logs in %s)", within, filepath.Dir(c.Members[0].dir))
	return -1
}

package etcdtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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
	token   string
	extra   []string // flags given to every member after the package's own
}

// Settle bounds every wait of the package for the cluster to reach a
// state (a leader elected, a member's client URL answering): generous,
// as CI runs the tests on 2 cores beside every other package's tests,
// and a poll ends as soon as the state is reached.
const Settle = 60 * time.Second

// startAttempts bounds the tries of Start: a member's port, free when it
// was picked, may be taken by another process before the member binds it.
const startAttempts = 3

// Start starts an n-member cluster and waits until it has a leader and
// every member answers as a member of it. The members stop when the test
// ends.
func Start(t testing.TB, n int) *Cluster {
	t.Helper()
	return StartFlags(t, n)
}

// StartFlags is Start with flags given to every member after the
// package's own (a later flag overrides an earlier one): a test of a
// setting a deployment may choose, such as a lower --max-txn-ops.
func StartFlags(t testing.TB, n int, flags ...string) *Cluster {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		t.Fatal(err)
	}
	c := &Cluster{t: t, bin: bin, extra: flags}
	root := t.TempDir() // removed after the members are killed (cleanups run last first)
	t.Cleanup(func() {
		for i := range c.Members {
			c.Kill(i)
		}
	})
	for attempt := 1; ; attempt++ {
		c.launch(filepath.Join(root, fmt.Sprintf("try%d", attempt)), n)
		err := c.settle(time.Now().Add(Settle))
		if err == nil {
			return c
		}
		if attempt == startAttempts {
			t.Fatalf("etcd cluster did not start after %d tries: %v (logs in %s)", attempt, err, root)
		}
		t.Logf("etcd cluster, try %d: %v; starting again on other ports", attempt, err)
		for i := range c.Members {
			c.Kill(i)
		}
	}
}

// launch starts n members on fresh loopback ports, their data under dir,
// with a cluster token of their own (a member of another test's cluster
// that took one of the ports cannot join this one).
func (c *Cluster) launch(dir string, n int) {
	c.t.Helper()
	var tok [8]byte
	if _, err := rand.Read(tok[:]); err != nil {
		c.t.Fatal(err)
	}
	c.token = "amptest-" + hex.EncodeToString(tok[:])
	c.Members = nil
	var initial []string
	for i := 0; i < n; i++ {
		m := &Member{Name: fmt.Sprintf("m%d", i), Client: freeAddr(c.t), peer: freeAddr(c.t), dir: filepath.Join(dir, fmt.Sprintf("m%d", i))}
		c.Members = append(c.Members, m)
		initial = append(initial, m.Name+"=http://"+m.peer)
	}
	c.initial = strings.Join(initial, ",")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		c.t.Fatal(err)
	}
	for i := range c.Members {
		c.start(i, "new")
	}
}

// errForeign: a member's client URL is answered by a member of another
// cluster (the port was taken before the member bound it).
var errForeign = errors.New("a member's client URL answers for another cluster")

// settle waits until dl for a leader and for every member to run and
// answer on its client URL as the member of this cluster it was started
// as: a member that could not bind its port exits, and whatever took
// the port answers otherwise.
func (c *Cluster) settle(dl time.Time) error {
	err := errors.New("no leader")
	for time.Now().Before(dl) {
		if err = c.check(); err == nil || errors.Is(err, errForeign) {
			return err
		}
		for _, m := range c.Members {
			select {
			case <-m.done:
				return fmt.Errorf("member %s exited", m.Name)
			default:
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return err
}

// check reports whether the cluster has a leader and each member lists
// every member with the peer URL it was started with (else errForeign)
// and the client URL it published.
func (c *Cluster) check() error {
	if c.Leader() < 0 {
		return errors.New("no leader")
	}
	for _, m := range c.Members {
		cli, err := clientv3.New(clientv3.Config{Endpoints: []string{m.Client}, DialTimeout: time.Second, Logger: zap.NewNop()})
		if err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		r, err := cli.MemberList(ctx)
		cancel()
		cli.Close()
		if err != nil {
			return fmt.Errorf("member %s: %w", m.Name, err)
		}
		var peers, all []string
		for _, x := range r.Members {
			peers = append(peers, fmt.Sprint(x.PeerURLs))
			all = append(all, fmt.Sprint(x.Name, x.PeerURLs, x.ClientURLs))
		}
		wantPeers, wantAll := c.want()
		slices.Sort(peers)
		slices.Sort(all)
		if !slices.Equal(peers, wantPeers) {
			return fmt.Errorf("member %s (%s) lists %v: %w", m.Name, m.Client, all, errForeign)
		}
		if !slices.Equal(all, wantAll) {
			return fmt.Errorf("member %s lists %v: not every member published its client URL", m.Name, all)
		}
	}
	return nil
}

// want is what MemberList answers for this cluster, sorted: the peer
// URLs, and each member's name, peer and client URLs.
func (c *Cluster) want() (peers, all []string) {
	for _, m := range c.Members {
		peers = append(peers, fmt.Sprint([]string{"http://" + m.peer}))
		all = append(all, fmt.Sprint(m.Name, []string{"http://" + m.peer}, []string{"http://" + m.Client}))
	}
	slices.Sort(peers)
	slices.Sort(all)
	return peers, all
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
	args := []string{"--name", m.Name, "--data-dir", m.dir,
		"--listen-client-urls", "http://" + m.Client, "--advertise-client-urls", "http://" + m.Client,
		"--listen-peer-urls", "http://" + m.peer, "--initial-advertise-peer-urls", "http://" + m.peer,
		"--initial-cluster", c.initial, "--initial-cluster-state", state, "--initial-cluster-token", c.token,
		// etcd's default raft timings: a member starved of CPU for 500 ms
		// on a loaded machine does not start an election, and a leader
		// killed on purpose is replaced within a few seconds.
		"--heartbeat-interval", "100", "--election-timeout", "1000", "--snapshot-count", "100000",
		"--logger", "zap", "--log-level", "warn"}
	cmd := exec.Command(c.bin, append(args, c.extra...)...)
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

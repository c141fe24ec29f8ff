package ampstcp_test

import (
	"context"
	"crypto/rand"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/agent"
	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/capability"
	"github.com/ampbundle/ampbundle/client"
	"github.com/ampbundle/ampbundle/transport/ampstcp"
)

// agentWait bounds the waits for the agent: generous, so that a machine
// under heavy load (a load average of 20 on 2 cores, -race) still gets
// there; an agent that never answers fails the test, it is not timed.
const agentWait = 2 * time.Minute

// serveTCP serves a on a loopback port and returns a transport to it.
func serveTCP(t *testing.T, a *agent.Agent) *ampstcp.Transport {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := ampstcp.NewServer(a, ampstcp.ServerOptions{})
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	tr, err := ampstcp.NewTransport("amp://"+ln.Addr().String(), ampstcp.ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.Close)
	return tr
}

// TestSendOnlyReportsNeedNoReplyFrame: a report sent with Send is
// delivered (the agent hands it to Config.Receipts) and Send returns at
// once, although no frame ever answers it; RoundTrip of the same kind of
// message waits for a reply that never comes (threat: a reporter that
// blocks, or leaks a waiter, per report it sends).
func TestSendOnlyReportsNeedNoReplyFrame(t *testing.T) {
	caller := newIdentity(t)
	var mu sync.Mutex
	var got []client.Receipt
	a, prov := provider(t, caller, func(c *agent.Config) {
		c.Receipts = func(ctx context.Context, r client.Receipt) { mu.Lock(); got = append(got, r); mu.Unlock() }
	})
	tr := serveTCP(t, a)
	report := func() []byte {
		s, _ := amp.NewSender(amp.SenderConfig{Identity: caller, Rand: rand.Reader, Now: time.Now})
		body, _ := amp.Marshal(map[string]any{})
		var orig [16]byte
		rand.Read(orig[:])
		_, msg, err := s.Seal(context.Background(), amp.Draft{Type: amp.TypeProcOK, To: amp.To(prov.DID), ReplyTo: orig[:], Body: body})
		if err != nil {
			t.Fatal(err)
		}
		return msg
	}
	ctx, cancel := context.WithTimeout(context.Background(), agentWait)
	defer cancel()
	for i := 0; i < 3; i++ {
		if err := tr.Send(ctx, report()); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(agentWait)
	for {
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the agent received %d of 3 reports after %v", n, agentWait)
		}
		time.Sleep(10 * time.Millisecond)
	}
	short, cancel2 := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel2()
	if _, err := tr.RoundTrip(short, report()); !amp.CodeOf(err).Retryable() || amp.CodeOf(err) != amp.CodeTimeout {
		t.Fatalf("RoundTrip of a report: %v (it can only time out: no reply comes)", err)
	}
	if err := tr.Send(ctx, []byte("not amp")); err == nil {
		t.Fatal("Send took bytes that are not an amp message")
	}
}

// TestInvokeLargeOverTCP: params over the message limit streamed over the
// TCP binding: STREAM_START and STREAM_DATA go out with Send (no reply
// frame comes for them), the STREAM_END's ACK and the CAP_RESULT come
// back as replies. Over a transport without Send the first chunk waits
// for a reply that never comes.
func TestInvokeLargeOverTCP(t *testing.T) {
	caller := newIdentity(t)
	a, prov := provider(t, caller, func(c *agent.Config) {
		c.Limits = amp.Limits{MaxMessageSize: 1 << 20}
		c.StreamLimits = agent.StreamLimits{SpoolDir: t.TempDir()}
		c.ParamStreams = &agent.ParamStreamLimits{}
	})
	tr := serveTCP(t, a)
	ctx, cancel := context.WithTimeout(context.Background(), agentWait)
	defer cancel()
	id, _ := capability.ParseID("org.example.translate.text:2.1.0")
	params, _ := amp.Marshal(map[string]any{"text": strings.Repeat("b", 5000), "target": "fr"})
	c, err := client.New(client.Config{Identity: caller, Peer: prov.DID, Transport: tr, Now: time.Now, Rand: rand.Reader})
	if err != nil {
		t.Fatal(err)
	}
	res, _, err := c.InvokeLarge(ctx, capability.Invoke{ID: id}, params, 512)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := amp.Unmarshal(res.Result, &out); err != nil || out["text"] != strings.Repeat("b", 5000) {
		t.Fatalf("result %v %v", out, err)
	}
	roundTripOnly, err := client.New(client.Config{Identity: caller, Peer: prov.DID, Transport: client.TransportFunc(tr.RoundTrip),
		Now: time.Now, Rand: rand.Reader, Retry: client.Retry{MaxAttempts: 1}})
	if err != nil {
		t.Fatal(err)
	}
	short, cancel2 := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel2()
	if _, _, err := roundTripOnly.InvokeLarge(short, capability.Invoke{ID: id}, params, 512); amp.CodeOf(err) != amp.CodeTimeout {
		t.Fatalf("streaming without Send: %v", err)
	}
}

package agent

import (
	"bytes"
	"context"
	"crypto/rand"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/capability"
	"github.com/ampbundle/ampbundle/client"
)

// TestParamsStreamReusedWhileInUseIsRefused: a sender whose streamed
// params are held by a running invocation streams params again under the
// same stream_id. That STREAM_END is refused retryably (5004
// params_stream_in_use, the stream stays open) rather than taking the
// place of the params in use, which used to leave them uncounted: with
// PerSender 1, three rounds of stream-then-invoke under one stream_id had
// three handlers hold streamed params, and three spool files on disk, at
// once. The count never goes over PerSender, and nothing is left once the
// invocation is answered and the stream reclaimed.
func TestParamsStreamReusedWhileInUseIsRefused(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{}, 8)
	var mu sync.Mutex
	running, most := 0, 0
	e, spool, _ := paramsEnv(t, &ParamStreamLimits{PerSender: 1}, withHandler("org.agentries.translate:1.0.0",
		func(ctx context.Context, params any) (any, error) {
			mu.Lock()
			running++
			most = max(most, running)
			mu.Unlock()
			entered <- struct{}{}
			<-release
			mu.Lock()
			running--
			mu.Unlock()
			return map[string]any{}, nil
		}))
	ctx := context.Background()
	c, err := client.New(client.Config{Identity: e.caller, Peer: e.provider.DID, Transport: client.Loopback(e.agent), Now: e.clock.Now,
		Rand: rand.Reader, Retry: client.Retry{MaxAttempts: 1}})
	if err != nil {
		t.Fatal(err)
	}
	params := bigText(t, 10<<10) // over the spool threshold (4 KiB): a file
	inv, err := translateInvoke(t).WithParamsStream("p", params)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	var once sync.Once
	defer once.Do(func() { close(release) })
	rounds := 0
	for range 3 {
		_, _, err := c.SendStream(ctx, client.Stream{ID: "p", ContentType: capability.ParamsContentType, Size: uint64(len(params)), ChunkSize: 8 << 10}, bytes.NewReader(params))
		if err != nil {
			if reasonOf(t, err) != "params_stream_in_use" || !amp.CodeOf(err).Retryable() {
				t.Fatalf("params streamed again under the stream_id of params in use: %v", err)
			}
			break
		}
		rounds++
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, _, err := c.Invoke(ctx, inv); err != nil {
				t.Errorf("invoke: %v", err)
			}
		}()
		select {
		case <-entered:
		case <-time.After(10 * time.Second):
			t.Fatal("the handler did not start")
		}
	}
	if rounds != 1 {
		t.Errorf("%d rounds of params under one stream_id ran at once (PerSender 1)", rounds)
	}
	files, _ := os.ReadDir(spool)
	if len(files) > 2 { // the params in use and the refused stream's
		t.Errorf("%d spool files for one sender with PerSender 1: %v", len(files), files)
	}
	once.Do(func() { close(release) })
	wg.Wait()
	mu.Lock()
	if most > 1 {
		t.Errorf("%d handlers held streamed params of one sender at once (PerSender 1)", most)
	}
	mu.Unlock()
	if n := e.agent.WaitingParams(); n != 0 {
		t.Errorf("%d params still waiting", n)
	}
	e.clock.Add(time.Hour)
	e.agent.ReclaimStreams()
	if left, _ := os.ReadDir(spool); len(left) != 0 {
		t.Errorf("spool files left: %v", left)
	}
}

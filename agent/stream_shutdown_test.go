package agent

import (
	"context"
	"crypto/rand"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/capability"
)

// backstop ends a wait a test holds open when the agent under test never
// lets go of it, so that a regression fails the test instead of hanging
// it; tests assert on whether it fired (a state), never on a duration.
const backstop = 5 * time.Second

// heldUntil blocks until release is closed or the backstop fires, and
// reports which (true: the backstop).
func heldUntil(release <-chan struct{}) bool {
	select {
	case <-release:
		return false
	case <-time.After(backstop):
		return true
	}
}

// spoolFiles lists the agent's spool files left in dir.
func spoolFiles(t *testing.T, dir string) []string {
	t.Helper()
	var left []string
	for _, p := range spoolPrefixes {
		m, err := filepath.Glob(filepath.Join(dir, p+"*"))
		must(t, err)
		left = append(left, m...)
	}
	return left
}

var spoolPrefixes = []string{"ampstream-", "ampparams-"}

// TestShutdownWhoseStreamHandlerHangsIsNotHeldByIt: Shutdown stops
// waiting at its deadline and returns shutdown_abandoned (AGENT-11)
// while a Config.Streams handler still holds a verified stream, and the
// stream's spool file is removed by its STREAM_END once the handler
// returns, also when the handler's retryable error keeps the stream
// (threat: Shutdown closed the streams by taking each one's lock, so it
// waited for the handler whatever its deadline; and a stream it could
// not take, kept by a retryable error, left its file in the spool).
func TestShutdownWhoseStreamHandlerHangsIsNotHeldByIt(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"handler accepts", nil},
		{"handler refuses retryably", amp.Named(amp.CodeOverloaded, "busy", "retry later")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			release, started := make(chan struct{}), make(chan struct{})
			var backstopped atomic.Bool
			e := newEnv(t, withMemoryLedger(), withConfig(func(c *Config) {
				c.StreamLimits = StreamLimits{SpoolThreshold: 8, SpoolDir: dir}
				c.Streams = func(ctx context.Context, _ StreamInfo, content io.Reader) error {
					close(started)
					backstopped.Store(heldUntil(release)) // ignores its context
					return tc.err
				}
			}))
			content := []byte("spooled content, more than eight bytes")
			e.send(amp.TypeStreamStart, startBody(t, "s", content, 10))
			for i, c := range chunks(content, 10) {
				e.send(amp.TypeStreamData, dataBody(t, "s", uint64(i), c))
			}
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, msg := e.seal(e.caller, amp.TypeStreamEnd, endBody(t, "s", content))
				e.agent.Handle(context.Background(), msg)
			}()
			<-started
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			err := e.agent.Shutdown(ctx)
			held := backstopped.Load()
			close(release)
			wg.Wait()
			if held || amp.NameOf(err) != ErrShutdownAbandoned {
				t.Fatalf("shutdown held by the stream handler: %v (waited for it: %v), want %s at once", err, held, ErrShutdownAbandoned)
			}
			if n := e.agent.OpenStreams(); n != 0 {
				t.Fatalf("%d streams open after the shutdown", n)
			}
			if left := spoolFiles(t, dir); len(left) != 0 {
				t.Fatalf("spool files left after the shutdown: %v", left)
			}
		})
	}
}

// gatedRand is crypto/rand that, once armed, holds its next read until
// released (or the backstop): the agent makes a spool file's name from it.
type gatedRand struct {
	armed              atomic.Bool
	entered, release   chan struct{}
	backstopped        atomic.Bool
	enteredOnce, relsd sync.Once
}

func (g *gatedRand) Read(p []byte) (int, error) {
	if g.armed.CompareAndSwap(true, false) {
		g.enteredOnce.Do(func() { close(g.entered) })
		g.backstopped.Store(heldUntil(g.release))
	}
	return rand.Read(p)
}

// TestShutdownWhileParamsAreStoredLeavesNoSpoolFile: params whose
// STREAM_END is being stored when Shutdown closes the agent are not left
// behind: the file made for them after the close is removed, they are not
// counted as waiting, and Shutdown was not held by the STREAM_END (threat:
// the keeper's close dropped params still being filled, and their
// ampparams-* file, made a moment later, stayed in the spool directory
// for good, one per STREAM_END in progress at the close).
func TestShutdownWhileParamsAreStoredLeavesNoSpoolFile(t *testing.T) {
	g := &gatedRand{entered: make(chan struct{}), release: make(chan struct{})}
	e, dir, _ := paramsEnv(t, &ParamStreamLimits{}, withConfig(func(c *Config) { c.Rand = g }))
	content := bigText(t, 8<<10)
	start, err := amp.Marshal(amp.StreamStartBody{StreamID: "p", ContentType: capability.ParamsContentType,
		TotalSize: uint64(len(content)), TotalChunks: uint64((len(content) + 4095) / 4096), ChunkSize: 4096, HashAlgo: "sha256"})
	must(t, err)
	e.send(amp.TypeStreamStart, start)
	for i, c := range chunks(content, 4096) {
		e.send(amp.TypeStreamData, dataBody(t, "p", uint64(i), c))
	}
	_, end := e.seal(e.caller, amp.TypeStreamEnd, endBody(t, "p", content))
	g.armed.Store(true) // the next name drawn is the params' spool file's
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		e.agent.Handle(context.Background(), end)
	}()
	<-g.entered
	if n := e.agent.WaitingParams(); n != 1 {
		t.Fatalf("%d params reserved while the STREAM_END stores them, want 1", n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err = e.agent.Shutdown(ctx)
	held := g.backstopped.Load()
	g.relsd.Do(func() { close(g.release) })
	wg.Wait()
	if held || amp.NameOf(err) != ErrShutdownAbandoned {
		t.Fatalf("shutdown held by a STREAM_END: %v (waited for it: %v), want %s at once", err, held, ErrShutdownAbandoned)
	}
	if n := e.agent.WaitingParams(); n != 0 {
		t.Fatalf("%d params waiting after the shutdown", n)
	}
	if left := spoolFiles(t, dir); len(left) != 0 {
		t.Fatalf("spool files left after the shutdown: %v", left)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Fatalf("files left in the spool directory: %v", left)
	}
}

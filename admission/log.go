package admission

import (
	"context"
	"log/slog"
	"sync/atomic"
)

// request is the request-scoped state a transport attaches with
// WithRemote. A context may be used by several goroutines at once, so
// logged is atomic.
type request struct {
	remote string
	logged atomic.Bool
}

type requestKey struct{}

// WithRemote returns ctx for one transport request from the peer address
// remote: log lines from Log name it ("remote"), and Logged reports
// afterwards whether any was written. Both are safe from any goroutine
// that holds ctx.
func WithRemote(ctx context.Context, remote string) context.Context {
	return context.WithValue(ctx, requestKey{}, &request{remote: remote})
}

// Logged reports whether a log line was written through Log for the
// request of ctx (from WithRemote).
func Logged(ctx context.Context) bool {
	r, _ := ctx.Value(requestKey{}).(*request)
	return r != nil && r.logged.Load()
}

// Log returns log for the request of ctx: with the peer's address when the
// transport gave it (WithRemote), and the request marked as logged.
func Log(ctx context.Context, log *slog.Logger) *slog.Logger {
	r, _ := ctx.Value(requestKey{}).(*request)
	if r == nil {
		return log
	}
	r.logged.Store(true)
	return log.With("remote", r.remote)
}

package mcpbridge

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ampbundle/ampbundle/agent"
	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/capability"
	"github.com/ampbundle/ampbundle/resolver"
)

// Agent is what the bridge needs of the agent; *agent.Agent implements
// it.
type Agent interface {
	InvokeLocal(ctx context.Context, call agent.LocalCall) (agent.LocalResult, error)
	Served() []capability.ID
	Allows(caller, name string) bool
	DID() string
}

// Options configure a Bridge.
type Options struct {
	// Agent returns the agent that serves calls now (a reload may replace
	// it). Required.
	Agent func() Agent
	// Store is the agent's registry store. Required.
	Store *resolver.Store
	// Logger receives the bridge's log lines (nil: discarded).
	Logger *slog.Logger
	// Refresh is how often the tool lists are compared with the store
	// (default 1 s; tools/list always re-verifies the caller's tools).
	Refresh time.Duration
	// MaxPrincipals bounds the principals served at once (default 1024).
	MaxPrincipals int
	// Version is the implementation version told to clients.
	Version string
}

// Bridge serves the agent's verified catalog over MCP: one MCP server per
// principal, whose tools are the capability versions the agent serves and
// the principal may use. Safe for concurrent use.
type Bridge struct {
	opts Options
	log  *slog.Logger

	mu      sync.Mutex
	servers map[string]*principalServer
}

// principalServer is the MCP server of one principal.
type principalServer struct {
	principal string
	server    *mcp.Server
	// mu serializes syncs; listed maps the tool names to their print.
	mu     sync.Mutex
	listed map[string]string
	// seen is the catalog and agent the tools were last built from.
	seen struct {
		cat *resolver.Catalog
		ag  Agent
	}
}

// New checks opts and returns a Bridge.
func New(opts Options) (*Bridge, error) {
	if opts.Agent == nil || opts.Store == nil {
		return nil, amp.Named(0, "misconfigured", "the mcp bridge needs the agent and its store")
	}
	if opts.Refresh <= 0 {
		opts.Refresh = time.Second
	}
	if opts.MaxPrincipals <= 0 {
		opts.MaxPrincipals = 1024
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Bridge{opts: opts, log: log, servers: map[string]*principalServer{}}, nil
}

// Server returns the MCP server of a principal (a DID the allow rules
// name), made and filled with its tools on first use; nil when
// MaxPrincipals servers exist already.
func (b *Bridge) Server(principal string) *mcp.Server {
	b.mu.Lock()
	ps := b.servers[principal]
	if ps == nil {
		if len(b.servers) >= b.opts.MaxPrincipals {
			b.mu.Unlock()
			return nil
		}
		ps = &principalServer{principal: principal, listed: map[string]string{}}
		ps.server = mcp.NewServer(&mcp.Implementation{Name: "ampagent", Version: b.opts.Version}, &mcp.ServerOptions{
			Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}},
		})
		ps.server.AddReceivingMiddleware(b.middleware(ps))
		b.servers[principal] = ps
	}
	b.mu.Unlock()
	b.sync(ps, true)
	return ps.server
}

// Run compares the tool lists with the store every Options.Refresh until
// ctx ends: a verified import, a removal, a revocation or an expiry
// changes the lists, and the SDK sends notifications/tools/list_changed
// to the principal's live sessions.
func (b *Bridge) Run(ctx context.Context) {
	t := time.NewTicker(b.opts.Refresh)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			b.Refresh(false)
		}
	}
}

// Refresh brings every principal's tools up to date now; with force the
// schemas are verified again even when nothing seems to have changed.
func (b *Bridge) Refresh(force bool) {
	b.mu.Lock()
	all := make([]*principalServer, 0, len(b.servers))
	for _, ps := range b.servers {
		all = append(all, ps)
	}
	b.mu.Unlock()
	for _, ps := range all {
		b.sync(ps, force)
	}
}

// sync makes ps's tools those the principal may use now, each built from
// verified bytes; a tool whose bundle fails a check is taken away.
func (b *Bridge) sync(ps *principalServer, force bool) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ag := b.opts.Agent()
	cat, err := b.opts.Store.Catalog()
	if err != nil {
		b.log.Error("mcp: catalog unavailable; no tools offered", "err", err)
		cat = nil
	}
	if !force && cat != nil && cat == ps.seen.cat && ag == ps.seen.ag {
		return
	}
	specs := b.specs(ag, cat, ps.principal)
	var gone []string
	for name := range ps.listed {
		if _, ok := specs[name]; !ok {
			gone = append(gone, name)
			delete(ps.listed, name)
		}
	}
	if len(gone) > 0 {
		ps.server.RemoveTools(gone...)
	}
	for name, s := range specs {
		if ps.listed[name] == s.print {
			continue
		}
		ps.server.AddTool(s.tool, refuseDirect)
		ps.listed[name] = s.print
	}
	ps.seen.cat, ps.seen.ag = cat, ag
}

// specs builds the tools of a principal: served by the agent, allowed by
// its policy, present in the catalog, verified.
func (b *Bridge) specs(ag Agent, cat *resolver.Catalog, principal string) map[string]*toolSpec {
	out := map[string]*toolSpec{}
	if cat == nil || ag == nil {
		return out
	}
	var infos map[string]bundleInfo
	for _, id := range ag.Served() {
		if !ag.Allows(principal, id.Name) {
			continue
		}
		e, ok := cat.Lookup(id)
		if !ok {
			continue // removed, revoked, expired or stale: not offered
		}
		if infos == nil {
			var err error
			if infos, err = bundleInfos(b.opts.Store); err != nil {
				b.log.Error("mcp: bundles unavailable; no tools offered", "err", err)
				return map[string]*toolSpec{}
			}
		}
		s, err := buildTool(b.opts.Store, e, infos[e.BundleID])
		if err != nil {
			b.log.Warn("mcp: capability not offered as a tool", "capability", id.String(), "name", string(amp.NameOf(err)), "err", amp.SafeMessage(err))
			continue
		}
		out[s.tool.Name] = s
	}
	return out
}

// refuseDirect is the SDK-side handler of every tool: never reached, since
// the middleware answers tools/call itself (our own validation, never the
// SDK's).
func refuseDirect(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return errorResult(amp.Named(amp.CodeInternalError, "not_routed", "internal error"), nil), nil
}

// middleware re-verifies the principal's tools before each tools/list
// and answers tools/call through the agent's pipeline.
func (b *Bridge) middleware(ps *principalServer) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			switch method {
			case "tools/list":
				b.sync(ps, true)
			case "tools/call":
				if r, ok := req.(*mcp.CallToolRequest); ok {
					return b.call(ctx, ps.principal, r.Params), nil
				}
			}
			return next(ctx, method, req)
		}
	}
}

// ServeStdio serves one MCP session over t (for the MCP stdio transport,
// an mcp.IOTransport on the process's stdin and stdout: newline-delimited
// JSON-RPC) for principal until the client closes it or ctx ends.
func (b *Bridge) ServeStdio(ctx context.Context, principal string, t mcp.Transport) error {
	srv := b.Server(principal)
	if srv == nil {
		return amp.Named(amp.CodeOverloaded, "busy", "too many principals")
	}
	return srv.Run(ctx, t)
}

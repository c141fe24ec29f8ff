package mcpbridge

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ampbundle/ampbundle/agent"
	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/capability"
	"github.com/ampbundle/ampbundle/internal/limit"
	"github.com/ampbundle/ampbundle/internal/offlineschema"
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
	// MaxPrincipalCalls bounds the tools/calls one principal runs at once,
	// over all its sessions and transports (default 16, the HTTP
	// endpoint's default share of one peer; an HTTP endpoint lowers it
	// to its MaxPeerInFlight). A call past it is refused at once with
	// 3005 too_many_calls (docs/SPEC-DECISIONS.md MCP-30). It bounds
	// apart, until each is answered, the principal's other requests
	// (tools/list, ping, …): past it, a JSON-RPC error CodeBusy,
	// ErrTooManyRequests (MCP-41).
	MaxPrincipalCalls int
	// MaxCalls bounds the tools/calls all principals together run at
	// once (default 4 times MaxPrincipalCalls, 64, the HTTP endpoint's
	// default MaxInFlight; an HTTP endpoint lowers it to its
	// MaxInFlight), and apart their other requests: past it a call is
	// refused 5004 too_many_calls, another request CodeBusy
	// ErrTooManyRequests with the AMP code 5004 (docs/SPEC-DECISIONS.md
	// MCP-47).
	MaxCalls int
	// MaxParamItems bounds the items of a tools/call's arguments, counted
	// before they are parsed: set it to the agent's
	// Config.MaxParamItems (default offlineschema.DefaultMaxItems, the
	// agent's default).
	MaxParamItems int
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

	// calls holds each principal's running tools/calls (MCP-30);
	// requests its other requests until they are answered (MCP-41).
	calls, requests callGate

	// genMu guards gen, the tools verified for the current catalog
	// generation and agent, shared by every principal.
	genMu sync.Mutex
	gen   *toolSet
}

// toolSet is every tool of one catalog generation and agent: each served
// capability version present in the catalog, built from verified bytes
// once (docs/SPEC-DECISIONS.md MCP-10).
type toolSet struct {
	cat   *resolver.Catalog
	ag    Agent
	specs []*toolSpec
	// byName maps each spec's tool name to its capability id, so that a
	// tools/call of a listed tool skips ParseToolName's version parse.
	byName map[string]capability.ID
	// tooLarge is set once a principal's tools were cut at MaxToolsBytes
	// in this generation (logged once, not per principal).
	tooLarge atomic.Bool
}

// principalServer is the MCP server of one principal.
type principalServer struct {
	principal string
	server    *mcp.Server
	// mu serializes syncs; listed maps the tool names to their print.
	mu     sync.Mutex
	listed map[string]string
	// seen is the tool set the tools were last made from.
	seen *toolSet
}

// New checks opts and returns a Bridge.
func New(opts Options) (*Bridge, error) {
	if opts.Agent == nil || opts.Store == nil {
		return nil, amp.Named(0, "misconfigured", "the mcp bridge needs the agent and its store")
	}
	limit.Default(&opts.Refresh, time.Second)
	limit.Default(&opts.MaxPrincipals, 1024)
	limit.Default(&opts.MaxPrincipalCalls, 16)
	limit.Default(&opts.MaxCalls, 4*opts.MaxPrincipalCalls)
	limit.Default(&opts.MaxParamItems, offlineschema.DefaultMaxItems)
	if opts.Version == "" {
		opts.Version = "dev"
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	b := &Bridge{opts: opts, log: log, servers: map[string]*principalServer{}}
	b.calls.share.Store(int64(opts.MaxPrincipalCalls))
	b.requests.share.Store(int64(opts.MaxPrincipalCalls))
	b.calls.total.Store(int64(opts.MaxCalls))
	b.requests.total.Store(int64(opts.MaxCalls))
	return b, nil
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
	b.sync(ps, false)
	return ps.server
}

// forget drops the server of a principal when it is srv (the HTTP
// endpoint evicts an idle principal); a later Server makes a new one.
func (b *Bridge) forget(principal string, srv *mcp.Server) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if ps := b.servers[principal]; ps != nil && ps.server == srv {
		delete(b.servers, principal)
	}
}

// holds reports whether srv is the server the bridge keeps for principal
// (Server made it and forget has not dropped it): the one Refresh keeps
// up to date.
func (b *Bridge) holds(principal string, srv *mcp.Server) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	ps := b.servers[principal]
	return ps != nil && ps.server == srv
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
	if force {
		b.genMu.Lock()
		b.gen = nil
		b.genMu.Unlock()
	}
	b.mu.Lock()
	all := slices.Collect(maps.Values(b.servers))
	b.mu.Unlock()
	for _, ps := range all {
		b.sync(ps, force)
	}
}

// tools returns the tool set of the current catalog generation and
// agent, verifying and building it when either changed (once for all
// principals; a refusal is logged once per generation).
func (b *Bridge) tools() *toolSet {
	ag := b.opts.Agent()
	cat, err := b.opts.Store.Catalog()
	if err != nil {
		b.log.Error("mcp: catalog unavailable; no tools offered", "err", err)
		return &toolSet{}
	}
	b.genMu.Lock()
	defer b.genMu.Unlock()
	if g := b.gen; g != nil && g.cat == cat && g.ag == ag {
		return g
	}
	g := &toolSet{cat: cat, ag: ag}
	if ag != nil {
		g.specs = b.build(ag, cat)
	}
	g.byName = make(map[string]capability.ID, len(g.specs))
	for _, s := range g.specs {
		g.byName[s.tool.Name] = s.id
	}
	b.gen = g
	return g
}

// toolID maps a tool name to its capability id: the last tool set's
// entry when it lists the tool (a cache of the parse, never a check: the
// agent's pipeline verifies the capability again), else ParseToolName.
func (b *Bridge) toolID(tool string) (capability.ID, error) {
	b.genMu.Lock()
	g := b.gen
	b.genMu.Unlock()
	if g != nil {
		if id, ok := g.byName[tool]; ok {
			return id, nil
		}
	}
	return ParseToolName(tool)
}

// build verifies and builds the tool of each capability version ag
// serves that the catalog holds.
func (b *Bridge) build(ag Agent, cat *resolver.Catalog) []*toolSpec {
	var out []*toolSpec
	var infos map[string]bundleInfo
	schemas := schemaCache{}
	for _, id := range ag.Served() {
		e, ok := cat.Lookup(id)
		if !ok {
			continue // removed, revoked, expired or stale: not offered
		}
		if infos == nil {
			var err error
			if infos, err = bundleInfos(b.opts.Store); err != nil {
				b.log.Error("mcp: bundles unavailable; no tools offered", "err", err)
				return nil
			}
		}
		s, err := buildTool(b.opts.Store, schemas, e, infos[e.BundleID])
		if err != nil {
			b.log.Warn("mcp: capability not offered as a tool", "capability", id.String(), "name", string(amp.NameOf(err)), "err", amp.SafeMessage(err))
			continue
		}
		out = append(out, s)
	}
	return out
}

// sync makes ps's tools those the principal may use now, each built from
// verified bytes; a tool whose bundle fails a check is taken away. With
// force the tools are set again even when the tool set is the one they
// were made from.
func (b *Bridge) sync(ps *principalServer, force bool) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	set := b.tools()
	if !force && set == ps.seen {
		return
	}
	specs := b.offered(ps.principal, set)
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
		if b.addTool(ps.server, s) {
			ps.listed[name] = s.print
		} else if _, was := ps.listed[name]; was {
			ps.server.RemoveTools(name) // never the previous version of a refused tool
			delete(ps.listed, name)
		}
	}
	ps.seen = set
}

// offered are the tools of set that principal may call and the SDK took,
// by name, within MaxToolsBytes in name order; the ones past it are
// logged, by count, once a generation.
func (b *Bridge) offered(principal string, set *toolSet) map[string]*toolSpec {
	var allowed []*toolSpec
	for _, s := range set.specs {
		if !s.refused.Load() && set.ag.Allows(principal, s.id.Name) {
			allowed = append(allowed, s)
		}
	}
	slices.SortFunc(allowed, func(x, y *toolSpec) int { return strings.Compare(x.tool.Name, y.tool.Name) })
	specs, total, left := map[string]*toolSpec{}, 0, 0
	for _, s := range allowed {
		if total+s.size > MaxToolsBytes {
			left++
			continue
		}
		total += s.size
		specs[s.tool.Name] = s
	}
	if left > 0 && !set.tooLarge.Swap(true) {
		b.log.Warn("mcp: tools not offered: their schemas, as tools/list writes them, are over the bound of one principal's tools", "name", "tools_too_large", "not_offered", left, "bound_bytes", MaxToolsBytes)
	}
	return specs
}

// addTool adds s to srv. The SDK's AddTool panics on a tool it refuses;
// buildTool refuses what go-sdk v1.8.0 is known to refuse, and this is
// the last line: the panic is recovered, the tool is not offered (to any
// principal, for this generation) and the refusal is logged once.
func (b *Bridge) addTool(srv *mcp.Server, s *toolSpec) (ok bool) {
	defer func() {
		if r := recover(); r != nil {
			ok = false
			if !s.refused.Swap(true) {
				// The panic's text quotes the schema: not logged.
				b.log.Error("mcp: the mcp sdk refused a tool; not offered", "capability", s.id.String(), "name", "sdk_refused_tool")
			}
		}
	}()
	srv.AddTool(s.tool, refuseDirect)
	return true
}

// refuseDirect is the SDK-side handler of every tool: never reached, since
// the middleware answers tools/call itself (our own validation, never the
// SDK's).
func refuseDirect(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return errorResult(amp.Named(amp.CodeInternalError, "not_routed", "internal error"), nil), nil
}

// middleware brings the principal's tools up to date before each
// tools/list (verifying them only when the catalog generation or the
// agent changed) and answers tools/call through the agent's pipeline,
// which verifies again; any other request (not a notification) takes one
// of the principal's request slots until its handler returned (a
// tools/list: until its answer is marshalled), or is refused
// (enterRequest, heldResult); an SDK error that may quote the request is replaced by
// its code's generic text. Params the SDK keeps for the session are
// bounded first (checkKeptParams).
func (b *Bridge) middleware(ps *principalServer) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if r, ok := req.(*mcp.CallToolRequest); ok && method == "tools/call" {
				return b.call(ctx, ps.principal, r.Params), nil
			}
			if err := checkKeptParams(method, req); err != nil {
				return nil, err // before the SDK keeps them for the session (MCP-51)
			}
			if strings.HasPrefix(method, "notifications/") {
				res, err := next(ctx, method, req)
				return res, safeRPCError(err)
			}
			release, refused := b.enterRequest(ps.principal)
			if refused != gateOpen {
				return nil, tooManyRequests(refused)
			}
			if method == "tools/list" {
				b.sync(ps, false) // cheap unless the generation changed
			}
			res, err := next(ctx, method, req)
			if err != nil || res == nil || method != "tools/list" {
				release() // an answer cheap to write: the handler was the work
				return res, safeRPCError(err)
			}
			return holdUntilMarshalled(res, release), nil // up to MaxToolsBytes to encode
		}
	}
}

// MaxSessionParams bounds, in bytes of JSON, the params of a message
// whose params go-sdk v1.8.0 keeps for its session's life
// (ServerSessionState, mcp/session.go): an initialize's (the client's
// info and capabilities), a notifications/initialized's, a
// logging/setLevel's. Only the body bound bounded them, so each session
// could keep three bodies (docs/SPEC-DECISIONS.md MCP-51). 64 KiB leaves
// room for a client's icons as data: URIs (clientInfo.icons, which the
// MCP specification allows) beside its info and capabilities.
const MaxSessionParams = 64 << 10

// MaxSessionParamValues bounds the JSON values of those params (every
// scalar, array and object one; member names none): a decoded value
// costs tens of bytes whatever its text.
const MaxSessionParamValues = 256

// ErrSessionParamsTooLarge names a message whose params the session would
// keep and that are over MaxSessionParams or MaxSessionParamValues: a
// JSON-RPC error, code -32602 (invalid params), data {"code":1001,"name"}.
const ErrSessionParamsTooLarge = "session_params_too_large"

// sessionParamsText is the message of ErrSessionParamsTooLarge.
const sessionParamsText = "the params are larger than a session keeps"

// sessionParamsData is the data of ErrSessionParamsTooLarge.
var sessionParamsData = mustJSON(map[string]any{"code": uint16(amp.CodeInvalidMessage), "name": ErrSessionParamsTooLarge})

// checkKeptParams refuses the params of a message the SDK keeps for the
// session (initialize, notifications/initialized, logging/setLevel) when
// they are over MaxSessionParams or MaxSessionParamValues, before the
// SDK's handler keeps them; nil for any other method.
func checkKeptParams(method string, req mcp.Request) error {
	switch method {
	case "initialize", "notifications/initialized", "logging/setLevel":
	default:
		return nil
	}
	data, err := json.Marshal(req.GetParams())
	if err == nil && len(data) <= MaxSessionParams {
		c := &bodyCounter{s: data, other: MaxSessionParamValues, maxDepth: MaxBodyDepth}
		if c.text(roleOther) == nil {
			return nil
		}
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: sessionParamsText, Data: sessionParamsData}
}

// safeRPCError replaces the message (and data) of a JSON-RPC error the SDK
// built, which may quote the request (a params decoding error, an unknown
// cursor), by its code's generic text. Other errors are the SDK's own
// sentinels, passed on as they are (docs/SPEC-DECISIONS.md MCP-12).
func safeRPCError(err error) error {
	var we *jsonrpc.Error
	if err == nil || !errors.As(err, &we) {
		return err
	}
	text := "request failed"
	switch we.Code {
	case jsonrpc.CodeParseError:
		text = "parse error"
	case jsonrpc.CodeInvalidRequest:
		text = "invalid request"
	case jsonrpc.CodeMethodNotFound:
		text = "method not found"
	case jsonrpc.CodeInvalidParams:
		text = "invalid params"
	case jsonrpc.CodeInternalError:
		text = "internal error"
	}
	return &jsonrpc.Error{Code: we.Code, Message: text}
}

// ServeStdio serves one MCP session over t (for the MCP stdio transport,
// an mcp.IOTransport on the process's stdin and stdout: newline-delimited
// JSON-RPC) for principal until the client closes it or ctx ends. Each
// message an mcp.IOTransport or mcp.StdioTransport reads is checked as
// the HTTP endpoint checks a body (its JSON values, nesting and request
// ids: MCP-20, MCP-35) before the SDK decodes it; the first refused ends
// the session with the check's named error. A batch holding a
// notification, which the SDK would never answer, is answered instead
// with a JSON-RPC error per request (ErrNotificationBatched, MCP-53), and
// the session goes on.
func (b *Bridge) ServeStdio(ctx context.Context, principal string, t mcp.Transport) error {
	srv := b.Server(principal)
	if srv == nil {
		return amp.Named(amp.CodeOverloaded, "busy", "too many principals")
	}
	return srv.Run(ctx, checkedStdio(t, b.opts.MaxParamItems))
}

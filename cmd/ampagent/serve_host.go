package main

import (
	"net/http"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/internal/cliutil"
	"github.com/ampbundle/ampbundle/internal/hostguard"
	"github.com/ampbundle/ampbundle/mirror"
)

// hostGuard is the agent's use of the module's one rule against DNS
// rebinding (internal/hostguard; docs/SPEC-DECISIONS.md CATALOG-20) for
// the listeners that serve the operator, not the network: the catalog
// (--catalog, --catalog-listen), the metrics (--metrics-listen) and MCP
// (--mcp-listen, on loopback connections: mcpbridge applies it). A request
// is served when its Host (port aside) is "localhost", a name given with
// --allow-host, or an IP literal (a loopback one on a loopback
// connection); anything else is 421 before the route runs.
type hostGuard struct{ g hostguard.Guard }

// newHostGuard checks the --allow-host names (hostguard.New); a bad one is
// a usage error naming the flag.
func newHostGuard(names []string) (hostGuard, error) {
	g, err := hostguard.New(names)
	if err != nil {
		return hostGuard{}, cliutil.Usagef("--allow-host: %s", amp.SafeMessage(err))
	}
	return hostGuard{g}, nil
}

// wrap returns next behind the guard, every answer (the refusal too) under
// MIRROR-7's script-free policy; the catalog sets its own over it.
func (g hostGuard) wrap(next http.Handler) http.Handler {
	return mirror.ScriptFree(g.g.Wrap(next))
}

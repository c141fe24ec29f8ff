package main

import (
	"bytes"
	"crypto/ed25519"
	"log/slog"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/ampbundle/ampbundle/agent"
	"github.com/ampbundle/ampbundle/agent/ledger"
	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/capability"
	"github.com/ampbundle/ampbundle/internal/cliutil"
	"github.com/ampbundle/ampbundle/resolver"
)

// The checks serve and mcp make before they open the ledger, the admin
// socket or a listener: a refused start leaves no file behind
// (docs/SPEC-DECISIONS.md CLI-11).

// ErrPublisherKeyAsAgentKey names an agent key that the agent's own store
// trusts as a publisher key (docs/SPEC-DECISIONS.md CLI-12).
const ErrPublisherKeyAsAgentKey = "publisher_key_as_agent_key"

// agentKey is the identity of an agent key file and whether the file
// holds only an Ed25519 key, as 'ampbundle keygen' writes a publisher key
// ('ampagent keygen' writes the X25519 key beside it).
type agentKey struct {
	id        amp.Identity
	signOnly  bool
	path, did string
}

// loadAgentKey reads the agent key file of --key, as loadIdentity does.
func loadAgentKey(c *cli.Context, env *cliutil.Env, keyPath, did string) (agentKey, error) {
	keys, err := cliutil.ReadPrivateKey(c, env, keyPath)
	if err != nil {
		return agentKey{}, err
	}
	id, err := identityOf(keys, did)
	if err != nil {
		return agentKey{}, err
	}
	return agentKey{id: id, signOnly: keys.X25519 == nil, path: keyPath, did: did}, nil
}

// checkAgentKey refuses an agent key that store trusts as a publisher key
// (the agent would sign its replies with a key that signs bundles, the
// key the air gap keeps offline), and warns on a key file that holds
// only an Ed25519 key: the shape of a publisher key, which may be one
// trusted by another store.
func checkAgentKey(store *resolver.Store, k agentKey, log *slog.Logger) error {
	keys, err := store.TrustList()
	if err != nil {
		return err
	}
	pub := k.id.SigningKey.Public().(ed25519.PublicKey)
	for _, t := range keys {
		if bytes.Equal(t.Key, pub) {
			return cliutil.WithHint(cliutil.Failf(ErrPublisherKeyAsAgentKey,
				"the agent key is the publisher key %q this store trusts: the agent would sign its replies with a key that signs bundles", t.Name),
				"make the agent an identity of its own with 'ampagent keygen --out agent.key', and keep the publisher key offline")
		}
	}
	if k.signOnly {
		log.Warn("the agent key file holds only an ed25519 key, as a publisher key from 'ampbundle keygen' does; an agent key from 'ampagent keygen' also holds its x25519 key. A publisher key belongs offline, never on a networked agent",
			"key", k.path, "did", k.id.DID)
	}
	return nil
}

// probeAgent runs every check agent.New makes of a config (the handlers'
// capabilities are in the store, the DID resolves to the key, the largest
// results fit the ledger's limits lim) on a ledger in memory: serve and
// mcp call it before they open the ledger's files.
func probeAgent(cfg agent.Config, lim ledger.Limits) error {
	led, err := ledger.New(ledger.NewMemory(lim), ledger.Options{Now: cfg.Now})
	if err != nil {
		return err
	}
	cfg.Ledger = led
	cfg.Logger = slog.New(slog.DiscardHandler)
	a, err := agent.New(cfg)
	if err != nil {
		return err
	}
	return a.Close()
}

// noToolWarning says, once at the start of `ampagent mcp`, why principal
// is allowed no tool: the config has no handler, or no allow rule covers
// one of them for principal; nothing when principal may use a tool.
func noToolWarning(log *slog.Logger, principal string, cfg *serveConfig) {
	if len(cfg.Handlers) == 0 {
		log.Warn("no tools: the config names no handler (\"handlers\" in --config FILE); tools/list is empty", "principal", principal)
		return
	}
	var names []string
	for idStr := range cfg.Handlers {
		id, err := capability.ParseID(idStr)
		if err != nil {
			continue // agent.New refused it
		}
		if cfg.rules.AllowCapability(principal, id.Name) {
			return
		}
		names = append(names, id.Name)
	}
	rule := principal + "=" + commonNamespace(names)
	log.Warn("no tools: no allow rule covers a handled capability for this principal; tools/list is empty",
		"principal", principal, "allow_with", "--allow "+rule+", or \""+rule+"\" in the config file's \"allow\"")
}

// commonNamespace is the longest namespace prefix ("org.example.") of
// names, the name itself for one name, or "*".
func commonNamespace(names []string) string {
	if len(names) == 0 {
		return "*"
	}
	if len(names) == 1 {
		return names[0]
	}
	labels := strings.Split(names[0], ".")
	n := len(labels)
	for _, name := range names[1:] {
		other := strings.Split(name, ".")
		i := 0
		for i < n && i < len(other) && labels[i] == other[i] {
			i++
		}
		n = i
	}
	if n == 0 {
		return "*"
	}
	return strings.Join(labels[:n], ".") + "."
}

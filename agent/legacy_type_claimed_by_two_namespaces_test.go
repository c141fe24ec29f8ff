package agent

import (
	"bytes"
	"slices"
	"testing"

	"github.com/ampbundle/ampbundle/agent/ledger"
	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/capability"
	"github.com/ampbundle/ampbundle/internal/admin"
	"github.com/ampbundle/ampbundle/resolver"
)

// socketRegistry feeds the agent its catalog through the admin socket's
// catalog document (internal/admin), as a remote reader of the store sees
// it; schemas and DID documents still come from the store.
type socketRegistry struct {
	storeRegistry
	remote *admin.Registry
}

func (r socketRegistry) Catalog() (*resolver.Catalog, error) { return r.remote.Catalog() }

// claimLintInBothNamespaces installs a bundle of each of the env's two
// publishers, each with a lint-check capability of its namespace (with a
// handler) and claiming the legacy type "lint" (the slug of neither, so
// that only the claims can resolve it) for it: the publishers are
// different authorities, so the store keeps both claims
// (docs/SPEC-DECISIONS.md BUNDLE-9).
func claimLintInBothNamespaces(e *env) {
	e.t.Helper()
	for i, ns := range []string{"org.agentries", "com.example"} {
		id := ns + ".lint-check:1.0.0"
		e.importBundle(testBundle(e.t, seedKey(byte(21+i)), ns+".lint", 1,
			map[string][2]string{id: {anyObject, anyObject}}, map[string]string{"lint": ns + ".lint-check"}))
		e.handlers[id] = e.echo(id)
	}
	e.cfg.Handlers = e.handlers
	cat, err := e.store.Catalog()
	if err != nil {
		e.t.Fatal(err)
	}
	if got := cat.TypeClaims("lint"); len(got) != 2 {
		e.t.Fatalf("the store keeps the claims %v of lint, want both", got)
	}
}

// TestLegacyTypeClaimedByTwoNamespacesIsAmbiguousAmongWhatTheCallerMaySee:
// a legacy type that two authorities claim must not be answered 4002 (the
// store's AmbiguousAlias names no capability) nor by either claim alone
// (a squatter's first come), but 4001 ambiguous_type naming the claimed
// names the caller may use (RFC 004 A.7, capability.ResolveTypeClaims);
// a caller allowed one of them gets that one, and a caller allowed
// neither learns of neither (A.9): the same 4002, byte for byte, as a type
// that exists nowhere. The agent answers alike whether its catalog comes
// from the store or through the admin socket's catalog document.
func TestLegacyTypeClaimedByTwoNamespacesIsAmbiguousAmongWhatTheCallerMaySee(t *testing.T) {
	both := []string{"com.example.lint-check", "org.agentries.lint-check"}
	for _, feed := range []string{"store", "admin socket"} {
		for _, tc := range []struct {
			name     string
			prefixes []string
			want     []string // the candidates of a 4001, one name resolved, or nil for 4002
		}{
			{"allowed both", []string{"org.agentries", "com.example."}, both},
			{"allowed com.example only", []string{"com.example."}, []string{"com.example.lint-check"}},
			{"allowed org.agentries only", []string{"org.agentries"}, []string{"org.agentries.lint-check"}},
			{"allowed neither", []string{"net.other"}, nil},
		} {
			t.Run(feed+"/"+tc.name, func(t *testing.T) {
				e := newEnv(t)
				claimLintInBothNamespaces(e)
				var rules Rules
				for _, p := range tc.prefixes {
					rules = append(rules, Rule{Caller: e.caller.DID, Prefix: p})
				}
				e.cfg.Policy = rules
				e.cfg.Ledger = memoryLedger(t, e.clock.Now, ledger.Limits{})
				if feed == "admin socket" {
					e.cfg.registry = socketRegistry{storeRegistry{e.store}, serveAdminSocket(e)}
				}
				a, err := New(e.cfg)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { a.Close() })
				e.agent = a

				query := func(typ string) *amp.Message {
					b, err := capability.Query{Filter: capability.Filter{Type: typ}}.Encode()
					if err != nil {
						t.Fatal(err)
					}
					_, reply := e.exchange(e.caller, amp.TypeCapQuery, b)
					return reply
				}
				invoke := func(typ string) *amp.Message {
					p, _ := amp.Marshal(goodParams)
					b, err := capability.Invoke{Type: typ, Version: mustVersion(t, "1.0.0"), Params: p}.Encode()
					if err != nil {
						t.Fatal(err)
					}
					_, reply := e.exchange(e.caller, amp.TypeCapInvoke, b)
					return reply
				}
				for what, reply := range map[string]*amp.Message{"CAP_QUERY": query("lint"), "CAP_INVOKE": invoke("lint")} {
					switch len(tc.want) {
					case 0:
						got, none := errorOf(t, reply), errorOf(t, query("no-such-type"))
						gb, _ := amp.Marshal(got)
						nb, _ := amp.Marshal(none)
						if got.Code != amp.CodeCapabilityNotFound || !bytes.Equal(gb, nb) {
							t.Fatalf("%s: lint answered %+v, a type that exists nowhere %+v", what, got, none)
						}
					case 1:
						if what == "CAP_QUERY" {
							if reply.Type != amp.TypeCapDeclare {
								eb, _ := amp.DecodeError(reply.Body)
								t.Fatalf("%s: lint answered %s %+v, want the declaration of %s", what, reply.Type.Name(), eb, tc.want[0])
							}
							d, err := capability.DecodeDeclare(reply.Body)
							if err != nil || len(d.Capabilities) == 0 || d.Capabilities[0].Name != tc.want[0] {
								t.Fatalf("%s: lint resolved to %+v %v, want %s", what, d.Capabilities, err, tc.want[0])
							}
						} else if got := resultVersion(t, resultOf(t, reply)); got != tc.want[0]+":1.0.0" {
							t.Fatalf("%s: lint ran %s, want %s", what, got, tc.want[0])
						}
					default:
						eb := errorOf(t, reply)
						var details struct {
							Candidates []string `cbor:"candidates"`
						}
						if len(eb.Details) > 0 {
							if err := amp.Unmarshal(eb.Details, &details); err != nil {
								t.Fatal(err)
							}
						}
						if eb.Code != amp.CodeBadRequest || !slices.Equal(details.Candidates, tc.want) {
							t.Fatalf("%s: lint answered %+v (candidates %v), want 4001 ambiguous_type naming %v", what, eb, details.Candidates, tc.want)
						}
					}
				}
			})
		}
	}
}

package admin

import (
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/capability"
	"github.com/ampbundle/ampbundle/resolver"
)

// Registry is the store API of the command line: each method runs one
// operation of Ops, on a local store (Run, called directly) or through an
// agent's admin socket (a Client is a Registry), with the same results
// and the same named errors either way.
type Registry struct {
	local  *resolver.Store
	client *Client

	mu    sync.Mutex
	audit *auditDoc // the snapshot Audit, AuditHead and VerifyAudit share
}

// Local is the Registry of a store this process holds.
func Local(s *resolver.Store) *Registry { return &Registry{local: s} }

// Store returns the local store, or false when the operations run in an
// agent.
func (r *Registry) Store() (*resolver.Store, bool) { return r.local, r.local != nil }

// Generation is the store's generation (through the socket: as of the
// last answer; FetchGeneration asks).
func (r *Registry) Generation() uint64 {
	if r.local != nil {
		return r.local.Generation()
	}
	return r.client.Generation()
}

// Close closes the store, or the client's connections.
func (r *Registry) Close() error {
	if r.local != nil {
		return r.local.Close()
	}
	return r.client.Close()
}

// call runs op with req: on the local store, or through the socket.
func call[Req, Resp any](r *Registry, op *Op[Req, Resp], req Req) (Resp, error) {
	if r.local != nil {
		return op.Run(r.local, req)
	}
	return Call(r.client, op, req)
}

// Import verifies and installs a bundle (resolver.Store.Import); through
// the socket, opts.Progress counts the bytes sent.
func (r *Registry) Import(ctx context.Context, body io.Reader, opts resolver.ImportOptions) (*resolver.ImportResult, error) {
	return call(r, opImport(), importRequest{ctx: ctx, body: body, opts: opts})
}

// CheckImport judges the bundle in body as Import would, installing,
// staging and auditing nothing (resolver.Store.CheckImport): nil, or the
// refusal Import would give, by the same name; res.Unchanged when the
// store holds that very bundle. Through an older agent's socket,
// unsupported.
func (r *Registry) CheckImport(ctx context.Context, body io.Reader) (*resolver.ImportResult, error) {
	return call(r, opCheckImport(), checkRequest{ctx, body})
}

// Export writes an installed bundle to w, byte-identical to the file
// imported (through the socket: checked by the agent before it sends
// anything).
func (r *Registry) Export(bundleID string, w io.Writer) error {
	_, err := call(r, opExport(), exportRequest{BundleID: bundleID, w: w})
	return err
}

// Remove removes an installed bundle and returns its version.
func (r *Registry) Remove(bundleID string) (uint64, error) {
	res, err := call(r, opRemove(), bundleRequest{bundleID})
	return res.Version, err
}

// Resolve returns the verified bytes of a schema reference.
func (r *Registry) Resolve(ref capability.SchemaRef) ([]byte, error) {
	res, err := call(r, opResolve(), resolveRequest{BundleID: ref.BundleID, ArtifactKey: ref.ArtifactKey, HashAlg: ref.HashAlg, Hash: hex.EncodeToString(ref.Hash)})
	if err != nil {
		return nil, err
	}
	return res.Data, nil
}

// Bundles lists the installed bundles.
func (r *Registry) Bundles() ([]resolver.Bundle, error) { return call(r, opBundles(), none{}) }

// Catalog returns the installed descriptors.
func (r *Registry) Catalog() (*resolver.Catalog, error) {
	if r.local != nil {
		return r.local.Catalog()
	}
	for range maxClaimsRestarts {
		doc, err := call(r, opCatalog(), none{})
		if err != nil {
			return nil, err
		}
		if !doc.TypeClaimsMore {
			return catalogOf(doc), nil
		}
		// Types the document left out: every claim, by pages, of the
		// document's generation; a move between the pages or since the
		// document reads both again (this loop's restarts alone).
		all, ok, err := readClaimPages(r.client)
		if err != nil {
			return nil, err
		}
		if ok && all.Generation == doc.Generation {
			return catalogWithClaims(doc, all.TypeClaims), nil
		}
	}
	return nil, errStoreChanging()
}

// TypeClaims returns every claim of each legacy type that bundles of
// several authorities claim (resolver.Catalog.TypeClaims of each type
// Aliases maps to resolver.AmbiguousAlias), sorted, and the generation
// they were read at. Through the socket it is read by pages of at most
// MaxTypeClaimsTotal claims, all of one generation (busy when the store
// kept changing); through an older agent's socket, unsupported.
func (r *Registry) TypeClaims() (map[string][]string, uint64, error) {
	if r.local != nil {
		c, err := r.local.Catalog()
		if err != nil {
			return nil, 0, err
		}
		p := typeClaimsFrom(c, 0, -1)
		return p.TypeClaims, p.Generation, nil
	}
	p, err := call(r, opTypeClaims(), claimsRequest{})
	if err != nil {
		return nil, 0, err
	}
	return p.TypeClaims, p.Generation, nil
}

// catalogWithClaims is the catalog doc describes with paged, every claim
// of its ambiguous types read by pages (readClaimPages) at doc's
// generation, in place of its type_claims.
func catalogWithClaims(doc *Catalog, paged map[string][]string) *resolver.Catalog {
	return catalogOf(&Catalog{Generation: doc.Generation, Entries: doc.Entries, Aliases: doc.Aliases}).
		WithTypeClaims(typeClaimsOf(doc.Aliases, paged, -1))
}

// typeClaimsOf is each type's claims: its Aliases entry, or, when that is
// resolver.AmbiguousAlias, its claims in claimed, unless they are none or
// more than most (most < 0: no bound), which leaves the type naming no
// capability.
func typeClaimsOf(aliases map[string]string, claimed map[string][]string, most int) map[string][]string {
	claims := make(map[string][]string, len(aliases))
	for typ, name := range aliases {
		claims[typ] = []string{name}
		if names := claimed[typ]; name == resolver.AmbiguousAlias && len(names) > 0 && (most < 0 || len(names) <= most) {
			claims[typ] = names
		}
	}
	return claims
}

// catalogOf is the catalog a document of the socket describes.
func catalogOf(doc *Catalog) *resolver.Catalog {
	cat := &resolver.Catalog{Generation: doc.Generation, Aliases: doc.Aliases, ByName: map[string][]resolver.Entry{}}
	for _, e := range doc.Entries {
		name := e.Descriptor.Name
		if _, seen := cat.ByName[name]; !seen {
			cat.Names = append(cat.Names, name)
		}
		cat.ByName[name] = append(cat.ByName[name], resolver.Entry{Descriptor: e.Descriptor, BundleID: e.BundleID})
	}
	if len(doc.TypeClaims) > 0 {
		// A type's claims are its Aliases entry, or, when that is
		// resolver.AmbiguousAlias, its TypeClaims. An older agent's
		// document has none: its ambiguous types name no capability.
		// More claims than the socket sends (MaxTypeClaims): kept as the
		// type naming no capability, as the server does.
		cat = cat.WithTypeClaims(typeClaimsOf(doc.Aliases, doc.TypeClaims, MaxTypeClaims))
	}
	return cat
}

// Check runs the store check.
func (r *Registry) Check() ([]resolver.Problem, error) { return call(r, opCheck(), none{}) }

// auditSnapshot takes the audit chain's head and verdict in one
// operation, once per Registry, and with withEntries the log of that same
// moment: Audit, AuditHead and VerifyAudit of one Registry describe the
// same moment (a later change needs a new one). The head and verdict are
// taken without the log (?entries=0, with the number of its entries), so
// that AuditHead costs a few hundred bytes whatever the log's length; the
// log is then asked for as that many first entries (?through=N), which
// are that moment's since the log only grows. An older agent answers the
// whole log every time: kept as the snapshot.
func (r *Registry) auditSnapshot(withEntries bool) (*auditDoc, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.audit == nil {
		doc, err := call(r, opAudit(), auditRequest{Entries: "0"})
		if err != nil {
			return nil, err
		}
		r.audit = doc
	}
	if withEntries && r.audit.Count != nil {
		n := *r.audit.Count
		doc, err := call(r, opAudit(), auditRequest{Through: strconv.FormatUint(n, 10)})
		if err != nil {
			return nil, err
		}
		if uint64(len(doc.Entries)) != n {
			return nil, amp.Named(0, "admin_socket", "the agent answered %d audit entries of a snapshot of %d", len(doc.Entries), n)
		}
		r.audit.Entries, r.audit.Count = doc.Entries, nil
	}
	return r.audit, nil
}

// Audit returns the audit log, oldest first.
func (r *Registry) Audit() ([]resolver.AuditEntry, error) {
	doc, err := r.auditSnapshot(true)
	if err != nil {
		return nil, err
	}
	return doc.Entries, nil
}

// AuditHead returns the hash of the last audit entry.
func (r *Registry) AuditHead() ([]byte, error) {
	doc, err := r.auditSnapshot(false)
	if err != nil {
		return nil, err
	}
	return hex.DecodeString(doc.Head)
}

// VerifyAudit checks the audit chain.
func (r *Registry) VerifyAudit() error {
	doc, err := r.auditSnapshot(false)
	switch {
	case err != nil:
		return err
	case doc.err != nil:
		return doc.err
	case !doc.Verified && doc.Error != nil:
		return amp.Named(0, amp.ErrName(doc.Error.Error.Code), "%s", doc.Error.Error.Message)
	}
	return nil
}

// FetchGeneration returns the store's generation now (Generation then
// returns it too). Every commit of an agent, whoever made it, bumps it: a
// reader that compares it with the generation it last read sees every
// change. An agent older than this program, without GET /v1/generation,
// is asked for its bundle list instead, whose answer carries the
// generation as every answer does.
func (r *Registry) FetchGeneration() (uint64, error) {
	_, err := call(r, opGeneration(), none{})
	if amp.NameOf(err) == resolver.ErrUnsupported {
		_, err = r.Bundles()
	}
	if err != nil {
		return 0, err
	}
	return r.Generation(), nil
}

// TrustAdd trusts a key for scopes.
func (r *Registry) TrustAdd(name string, key ed25519.PublicKey, scopes []string) error {
	_, err := call(r, opTrustAdd(), trustAddRequest{Name: name, Key: amp.DIDKey(key), Scopes: scopes})
	return err
}

// TrustAddWithThreshold trusts key as TrustAdd does and sets the threshold
// of each scope to n, in one transaction. An agent older than the
// threshold field refuses the body as not the expected json: that answer
// is unsupported here.
func (r *Registry) TrustAddWithThreshold(name string, key ed25519.PublicKey, scopes []string, n int) error {
	_, err := call(r, opTrustAdd(), trustAddRequest{Name: name, Key: amp.DIDKey(key), Scopes: scopes, Threshold: &n})
	if r.client != nil && amp.NameOf(err) == "bad_request" {
		return amp.Named(0, resolver.ErrUnsupported, "the agent's admin socket does not take a threshold with trust add (an older agent: restart it with this version)")
	}
	return err
}

// TrustRemove stops trusting a key.
func (r *Registry) TrustRemove(name string) error {
	_, err := call(r, opTrustRemove(), trustRemoveRequest{Name: name})
	return err
}

// TrustRemoveFailClosed stops trusting a key and fails closed the
// installed bundles left below their threshold.
func (r *Registry) TrustRemoveFailClosed(name string) ([]string, error) {
	res, err := call(r, opTrustRemove(), trustRemoveRequest{Name: name, FailClosed: true})
	if err != nil {
		return nil, err
	}
	return res.FailedClosed, nil
}

// TrustList lists the trusted keys.
func (r *Registry) TrustList() ([]resolver.TrustKey, error) {
	if r.local != nil {
		return r.local.TrustList()
	}
	keys, err := call(r, opTrustList(), none{})
	if err != nil {
		return nil, err
	}
	out := make([]resolver.TrustKey, 0, len(keys))
	for _, k := range keys {
		pub, err := didKeyPublic(k.Key)
		if err != nil {
			return nil, err
		}
		out = append(out, resolver.TrustKey{Name: k.Name, Key: pub, Scopes: k.Scopes, AddedAt: k.AddedAt, Except: k.Except})
	}
	return out, nil
}

// TrustSetThreshold sets the threshold of scope.
func (r *Registry) TrustSetThreshold(scope string, n int) error {
	_, err := call(r, opTrustSetThreshold(), thresholdRequest{scope, n})
	return err
}

// TrustThresholds lists the thresholds set.
func (r *Registry) TrustThresholds() (map[string]int, error) {
	return call(r, opTrustThresholds(), none{})
}

// TrustChains lists the trust statement chains applied.
func (r *Registry) TrustChains() (map[string]uint64, error) { return call(r, opTrustChains(), none{}) }

// TrustRefused lists the keys the store holds but trusts for nothing
// (resolver.Store.TrustRefused). Through an older agent's socket,
// unsupported.
func (r *Registry) TrustRefused() ([]resolver.RefusedTrustKey, error) {
	return call(r, opTrustRefused(), none{})
}

// ApplyTrustPolicyFile parses and applies the trust policy file data.
func (r *Registry) ApplyTrustPolicyFile(data []byte) (*resolver.PolicyResult, error) {
	return call(r, opTrustPolicy(), data)
}

// FreshnessPolicy lists the staleness bounds.
func (r *Registry) FreshnessPolicy() ([]resolver.Freshness, error) {
	return call(r, opFreshnessPolicy(), none{})
}

// SetFreshnessPolicy sets the staleness bounds of scope; maxAge counts in
// whole seconds.
func (r *Registry) SetFreshnessPolicy(scope string, maxVersions *uint64, maxAge time.Duration) error {
	_, err := call(r, opSetFreshnessPolicy(), freshnessRequest{Scope: scope, MaxVersions: maxVersions, MaxAgeSeconds: uint64(maxAge / time.Second)})
	return err
}

// ResetHeartbeat forgets the heartbeat of the line bundleID and returns
// the version it named.
func (r *Registry) ResetHeartbeat(bundleID string) (uint64, error) {
	res, err := call(r, opResetHeartbeat(), bundleRequest{bundleID})
	return res.Version, err
}

// ApplyRevocation applies a signed revocation statement.
func (r *Registry) ApplyRevocation(data []byte) (*resolver.RevokeResult, error) {
	return call(r, opRevocation(), data)
}

// ApplyRotation applies a signed trust statement.
func (r *Registry) ApplyRotation(data []byte) (*resolver.RotateResult, error) {
	return call(r, opRotation(), data)
}

// ApplyHeartbeat applies a signed heartbeat statement.
func (r *Registry) ApplyHeartbeat(data []byte) (*resolver.HeartbeatResult, error) {
	return call(r, opHeartbeat(), data)
}

// Statements lists the signed trust and revocation statements applied, in
// order. Through the socket, bytes that do not hash to the statement's
// SHA-256 are refused.
func (r *Registry) Statements() ([]resolver.Statement, error) {
	out, err := call(r, opStatements(), none{})
	if err != nil || r.local != nil {
		return out, err
	}
	for _, st := range out {
		if err := ownBytes(st.Data, st.SHA256, "statement"); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Heartbeats lists the heartbeat kept per bundle line. Through the
// socket, bytes that do not hash to the heartbeat's SHA-256 are refused.
func (r *Registry) Heartbeats() ([]resolver.KeptHeartbeat, error) {
	out, err := call(r, opHeartbeats(), none{})
	if err != nil || r.local != nil {
		return out, err
	}
	for _, h := range out {
		if h.Data != nil { // nil: the store does not have them
			if err := ownBytes(h.Data, h.SHA256, "heartbeat"); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// RefusedAt reports whether the store refused the file whose SHA-256 is
// sum at its current generation lately, and with which verdict
// (resolver.Store.RefusedAt); through an older agent's socket,
// unsupported.
func (r *Registry) RefusedAt(sum []byte) (verdict string, ok bool, err error) {
	if r.local != nil {
		return r.local.RefusedAt(sum)
	}
	res, err := call(r, opRefusedAt(), hasRequest{hex.EncodeToString(sum)})
	if err != nil {
		return "", false, err
	}
	if res.Refused && !amp.ValidErrName(res.Verdict) {
		return "", false, amp.Named(0, "admin_socket", "the agent's answer names a refusal verdict that is not an error name")
	}
	return res.Verdict, res.Refused, nil
}

// HasStatement reports whether the store applied the statement whose
// SHA-256 is sum.
func (r *Registry) HasStatement(sum []byte) (bool, error) {
	if r.local != nil {
		return r.local.HasStatement(sum)
	}
	res, err := call(r, opHasStatement(), hasRequest{hex.EncodeToString(sum)})
	return res.Has, err
}

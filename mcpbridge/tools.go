package mcpbridge

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"strings"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/capability"
	"github.com/ampbundle/ampbundle/resolver"
)

// MetaKey is the key of the bridge's entry in a tool's and a result's
// _meta (docs/FORMAT.md, "MCP tools").
const MetaKey = "io.github.ampbundle/verified"

// DefsPrefix prefixes the $defs entries that carry the other artifacts of
// a schema's $ref closure.
const DefsPrefix = "ampbundle:"

// ErrNotObjectSchema names a capability whose input schema is not an
// object schema: MCP requires one, so it is not offered as a tool.
const ErrNotObjectSchema = "input_schema_not_object"

// SchemaMeta describes one listed schema in a tool's _meta.
type SchemaMeta struct {
	// ArtifactKey is the root schema's artifact key in its bundle.
	ArtifactKey string `json:"artifact_key"`
	// SHA256 is the lowercase hex SHA-256 of the root's stored bytes.
	SHA256 string `json:"sha256"`
	// Closure maps every artifact key of the $ref closure, root
	// included, to the lowercase hex SHA-256 of its stored bytes.
	Closure map[string]string `json:"closure"`
}

// PublisherKey names a publisher key whose signature on the bundle
// verified.
type PublisherKey struct {
	Name string `json:"name"`
	// DID is the key's did:key.
	DID string `json:"did"`
}

// ToolMeta is a tool's _meta[MetaKey].
type ToolMeta struct {
	Capability    string         `json:"capability"`
	BundleID      string         `json:"bundle_id"`
	BundleVersion uint64         `json:"bundle_version"`
	InputSchema   SchemaMeta     `json:"input_schema"`
	OutputSchema  SchemaMeta     `json:"output_schema"`
	PublisherKeys []PublisherKey `json:"publisher_keys"`
	// OutputSchemaListed is false when the output schema is not an
	// object schema: it is then not the tool's outputSchema (MCP wants
	// an object) and structured results are not promised.
	OutputSchemaListed bool `json:"output_schema_listed"`
}

// toolSpec is one capability version as a verified MCP tool.
type toolSpec struct {
	id   capability.ID
	tool *mcp.Tool
	// print identifies the tool's content (the SHA-256 of its JSON): a
	// change re-adds the tool.
	print string
	// refused is set once the SDK refused the tool (addTool).
	refused atomic.Bool
	// size is the length of the tool's JSON as tools/list writes it.
	size int
}

// bundleInfo is what a tool's _meta says of its bundle.
type bundleInfo struct {
	version uint64
	keys    []PublisherKey
}

// bundleInfos maps the installed bundles to their version and signers'
// keys.
func bundleInfos(store *resolver.Store) (map[string]bundleInfo, error) {
	bs, err := store.Bundles()
	if err != nil {
		return nil, err
	}
	trust, err := store.TrustList()
	if err != nil {
		return nil, err
	}
	dids := map[string]string{}
	for _, k := range trust {
		dids[k.Name] = k.DID()
	}
	out := map[string]bundleInfo{}
	for _, b := range bs {
		info := bundleInfo{version: b.Version, keys: []PublisherKey{}}
		for _, s := range b.Signers {
			info.keys = append(info.keys, PublisherKey{Name: s, DID: dids[s]})
		}
		out[b.BundleID] = info
	}
	return out, nil
}

// MaxToolSchema bounds the rendered schemas of one tool, input and output
// together, in bytes: a capability whose closure renders larger is not
// offered (ErrToolSchemaTooLarge; docs/SPEC-DECISIONS.md MCP-31).
const MaxToolSchema = 1 << 20

// MaxToolsBytes bounds the tools one principal is offered, as tools/list
// writes them (their JSON summed): tools naming one schema share its
// rendering in memory (MCP-31), but every list answer writes it once per
// tool, so a signed bundle of many capabilities naming one large schema
// would make each answer hundreds of megabytes (the SDK's page is 1,000
// tools). Tools past the bound, in name order, are not offered
// (docs/SPEC-DECISIONS.md MCP-34).
const MaxToolsBytes = 16 << 20

// ErrToolSchemaTooLarge names a capability whose rendered schemas exceed
// MaxToolSchema.
const ErrToolSchemaTooLarge = "tool_schema_too_large"

// sharedSchema is one schema rendered with its $ref closure (closure),
// shared by every tool of a generation whose descriptor names the same
// schema (bundle, artifact key and hash): a bundle of many capabilities
// that $ref one large artifact holds its rendering once, not once per
// tool (MCP-31). It is a tool's InputSchema or OutputSchema as it is;
// the SDK and tools/list encode it through MarshalJSON.
type sharedSchema struct {
	doc  json.RawMessage
	meta SchemaMeta // read only: shared too
	obj  bool
}

// MarshalJSON returns the rendered document (never changed once built).
func (s *sharedSchema) MarshalJSON() ([]byte, error) { return s.doc, nil }

// schemaCache holds the schemas rendered for one generation's tools, by
// schemaKey, with the error of one that could not be.
type schemaCache map[string]schemaRender

type schemaRender struct {
	s   *sharedSchema
	err error
}

// schemaKey identifies what a schema reference renders to in one
// catalog generation: every field closure reads.
func schemaKey(ref capability.SchemaRef) string {
	return strings.Join([]string{ref.BundleID, ref.ArtifactKey, ref.URI, ref.MediaType, ref.HashAlg, hex.EncodeToString(ref.Hash)}, "\x00")
}

// render returns ref's rendering, made once per cache.
func (c schemaCache) render(store *resolver.Store, ref capability.SchemaRef) (*sharedSchema, error) {
	k := schemaKey(ref)
	if r, ok := c[k]; ok {
		return r.s, r.err
	}
	doc, meta, obj, err := closure(store, ref)
	var s *sharedSchema
	if err == nil {
		s = &sharedSchema{doc: doc, meta: meta, obj: obj}
	}
	c[k] = schemaRender{s: s, err: err}
	return s, err
}

// buildTool makes the tool of a catalog entry from hash-verified bytes
// only: both schemas compiled with their whole $ref closure (the store
// checks every artifact), the root checked against the descriptor's hash,
// each rendered once per generation (schemas).
func buildTool(store *resolver.Store, schemas schemaCache, e resolver.Entry, info bundleInfo) (*toolSpec, error) {
	id := capability.ID{Name: e.Descriptor.Name, Version: e.Descriptor.Version}
	name, ok := ToolName(id)
	if !ok {
		return nil, amp.Named(amp.CodeUnavailable, ErrToolName, "the capability id is too long for an MCP tool name")
	}
	in, err := schemas.render(store, e.Descriptor.InputSchema)
	if err != nil {
		return nil, err
	}
	if !in.obj {
		return nil, amp.Named(amp.CodeUnavailable, ErrNotObjectSchema, "the input schema is not an object schema (MCP requires one)")
	}
	if err := checkHeaderAnnotations(in.doc); err != nil {
		return nil, err // the SDK's AddTool would panic on it
	}
	out, err := schemas.render(store, e.Descriptor.OutputSchema)
	if err != nil {
		return nil, err
	}
	size := len(in.doc)
	if out.obj {
		size += len(out.doc)
	}
	if size > MaxToolSchema {
		return nil, amp.Named(amp.CodeUnavailable, ErrToolSchemaTooLarge, "the schemas render to %d bytes, over the %d-byte bound of a tool", size, MaxToolSchema)
	}
	meta := ToolMeta{Capability: id.String(), BundleID: e.BundleID, BundleVersion: info.version,
		InputSchema: in.meta, OutputSchema: out.meta, PublisherKeys: info.keys, OutputSchemaListed: out.obj}
	if meta.PublisherKeys == nil {
		meta.PublisherKeys = []PublisherKey{}
	}
	t := &mcp.Tool{Name: name, Title: id.String(), InputSchema: in, Meta: mcp.Meta{MetaKey: meta}}
	if e.Descriptor.Notes != "" {
		t.Description = e.Descriptor.Notes
	} else {
		t.Description = "Capability " + id.String() + " from the verified bundle " + e.BundleID + "."
	}
	if out.obj {
		t.OutputSchema = out
	}
	enc, err := json.Marshal(t)
	if err != nil {
		return nil, amp.Wrap(amp.CodeInternalError, err, "cannot encode a tool")
	}
	sum := sha256.Sum256(enc) // the print: a digest, not a second copy
	return &toolSpec{id: id, tool: t, print: hex.EncodeToString(sum[:]), size: len(enc)}, nil
}

// closure returns a schema reference's JSON Schema with its whole $ref
// closure, built from verified bytes: the root's stored bytes unchanged
// when the closure is the root alone; otherwise a compound schema
// document (JSON Schema 2020-12 §9.3): the root, with "$id"
// "ampbundle:///KEY" when it has none, and each other artifact under
// "$defs" / "ampbundle:KEY" as a resource of that URI (withID), so that
// every $ref resolves inside the document. obj reports a root whose
// "type" is "object".
func closure(store *resolver.Store, ref capability.SchemaRef) (doc json.RawMessage, meta SchemaMeta, obj bool, err error) {
	sch, err := store.Schema(ref) // the closure, compiled from verified bytes
	if err != nil {
		return nil, meta, false, err
	}
	root, err := store.Resolve(ref) // the root, against the descriptor's hash
	if err != nil {
		return nil, meta, false, err
	}
	sum := sha256.Sum256(root)
	meta = SchemaMeta{ArtifactKey: ref.ArtifactKey, SHA256: hex.EncodeToString(sum[:]), Closure: map[string]string{ref.ArtifactKey: hex.EncodeToString(sum[:])}}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(root, &top); err != nil {
		return nil, meta, false, amp.Named(amp.CodeUnavailable, "schema_not_object", "the schema %s is not a json object", ref.ArtifactKey)
	}
	obj = bytes.Equal(bytes.TrimSpace(top["type"]), []byte(`"object"`))
	deps := sch.Deps()
	if len(deps) <= 1 {
		return json.RawMessage(root), meta, obj, nil
	}
	loader := store.Loader(ref.BundleID)
	defs := map[string]json.RawMessage{}
	if raw, ok := top["$defs"]; ok {
		if err := json.Unmarshal(raw, &defs); err != nil {
			return nil, meta, false, amp.Named(amp.CodeUnavailable, "schema_not_bundlable", "the $defs of %s is not an object", ref.ArtifactKey)
		}
	}
	for _, key := range deps {
		if key == ref.ArtifactKey {
			continue
		}
		data, err := loader.Load(key) // checked against the bundle's declared hash
		if err != nil {
			return nil, meta, false, err
		}
		s := sha256.Sum256(data)
		meta.Closure[key] = hex.EncodeToString(s[:])
		emb, err := withID(data, key)
		if err != nil {
			return nil, meta, false, err
		}
		if _, clash := defs[DefsPrefix+key]; clash {
			return nil, meta, false, amp.Named(amp.CodeUnavailable, "schema_not_bundlable", "the $defs of %s already has %s%s", ref.ArtifactKey, DefsPrefix, key)
		}
		defs[DefsPrefix+key] = emb
	}
	// The root keeps its own "$id" (its references resolve against it,
	// as the compiler resolved them); else it gets its artifact's URL.
	m := top
	if _, ok := m["$id"]; !ok {
		m["$id"], _ = json.Marshal((&url.URL{Scheme: "ampbundle", Path: "/" + ref.ArtifactKey}).String())
	}
	if m["$defs"], err = json.Marshal(defs); err != nil {
		return nil, meta, false, amp.Wrap(amp.CodeInternalError, err, "cannot encode a schema")
	}
	out, err := json.Marshal(m)
	if err != nil {
		return nil, meta, false, amp.Wrap(amp.CodeInternalError, err, "cannot encode a schema")
	}
	return out, meta, obj, nil
}

// withID returns the JSON object data as an embedded schema resource
// whose URI is the artifact's URL, "ampbundle:///KEY": the object itself
// with that "$id" when it has none; when it has its own "$id" X, a
// resource {"$id": URL, "$ref": X, "$defs": {"artifact": data}}, so that
// references by URL and by X both resolve. A boolean schema is returned
// as it is.
func withID(data []byte, key string) (json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		var b bool
		if json.Unmarshal(data, &b) == nil {
			return json.RawMessage(data), nil
		}
		return nil, amp.Named(amp.CodeUnavailable, "schema_not_object", "the schema %s is not a json object", key)
	}
	u, _ := json.Marshal((&url.URL{Scheme: "ampbundle", Path: "/" + key}).String())
	own, ok := m["$id"]
	if !ok {
		m["$id"] = u
		return json.Marshal(m)
	}
	if bytes.Equal(own, u) {
		return json.RawMessage(data), nil
	}
	return json.Marshal(map[string]json.RawMessage{"$id": u, "$ref": own, "$defs": mustJSON(map[string]json.RawMessage{"artifact": data})})
}

func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

package admin

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/capability"
	"github.com/ampbundle/ampbundle/resolver"
)

// SocketPath is the default socket of the store at db.
func SocketPath(db string) string { return db + ".admin.sock" }

// maxUpload bounds an uploaded bundle (the store's own caps bound each
// artifact; this bounds the request).
const maxUpload = 8 << 30

// maxStatement bounds an uploaded statement (the largest statement file,
// a revocation's).
const maxStatement = bundle.MaxRevocationSize

// errorDoc is the error document of the socket (and of the CLI contract).
type errorDoc struct {
	Error struct {
		Code    string          `json:"code"`
		AMPCode uint16          `json:"amp_code,omitempty"`
		Message string          `json:"message"`
		Details json.RawMessage `json:"details,omitempty"`
	} `json:"error"`
}

func writeError(w http.ResponseWriter, err error) {
	e := amp.AsError(err)
	var doc errorDoc
	doc.Error.Code, doc.Error.AMPCode, doc.Error.Message = string(amp.NameOf(e)), uint16(e.Code), e.Message
	if e.Details != nil {
		if d, err := json.Marshal(e.Details); err == nil {
			doc.Error.Details = d
		}
	}
	status := http.StatusBadRequest
	switch {
	case e.Code == amp.CodeInternalError || errors.Is(err, resolver.ErrStoreIO):
		status = http.StatusInternalServerError
	case errors.Is(err, resolver.ErrUnknownBundle) || errors.Is(err, resolver.ErrUnknownTrust):
		status = http.StatusNotFound
	}
	writeJSON(w, status, doc)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// TrustKey is a trusted key on the socket (the key as a did:key).
type TrustKey struct {
	Name    string   `json:"name"`
	Key     string   `json:"key"`
	Scopes  []string `json:"scopes"`
	AddedAt string   `json:"added_at"`
	// Except are the scopes the key was revoked for (resolver.TrustKey).
	Except []string `json:"except,omitempty"`
}

// Catalog is resolver.Catalog on the socket.
type Catalog struct {
	Generation uint64            `json:"generation"`
	Entries    []CatalogEntry    `json:"entries"`
	Aliases    map[string]string `json:"aliases"`
}

// CatalogEntry is one installed descriptor.
type CatalogEntry struct {
	BundleID   string                `json:"bundle_id"`
	Descriptor capability.Descriptor `json:"descriptor"`
}

// resolveRequest is the body of /v1/resolve: the local locator and hash of
// a schema reference (a uri is never used, so it is not sent).
type resolveRequest struct {
	BundleID    string `json:"bundle_id"`
	ArtifactKey string `json:"artifact_key"`
	HashAlg     string `json:"hash_alg"`
	Hash        string `json:"hash"`
}

// freshnessRequest is the body of POST /v1/freshness
// (resolver.Store.SetFreshnessPolicy).
type freshnessRequest struct {
	Scope         string  `json:"scope"`
	MaxVersions   *uint64 `json:"max_versions,omitempty"`
	MaxAgeSeconds uint64  `json:"max_age_seconds,omitempty"`
}

type auditDoc struct {
	Entries  []resolver.AuditEntry `json:"entries"`
	Head     string                `json:"head"`
	Verified bool                  `json:"verified"`
	Error    *errorDoc             `json:"error,omitempty"`
}

// GenerationHeader carries the store's generation (resolver.Store.Generation)
// after the request, on every answer.
const GenerationHeader = "X-Store-Generation"

func setGeneration(w http.ResponseWriter, s *resolver.Store) {
	w.Header().Set(GenerationHeader, strconv.FormatUint(s.Generation(), 10))
}

// NewHandler serves the admin API over s.
func NewHandler(s *resolver.Store, log *slog.Logger) http.Handler {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	// Every line says it came through the socket (and so from the
	// agent's own user): a log throttle keeps them all (docs/CLI.md, "Log
	// volume").
	log = log.With("via", "admin_socket")
	mux := http.NewServeMux()
	route := func(method, path string, fn func(w http.ResponseWriter, r *http.Request) (any, error)) {
		mux.HandleFunc(method+" "+path, func(w http.ResponseWriter, r *http.Request) {
			setGeneration(w, s)
			v, err := fn(w, r)
			setGeneration(w, s) // after a change, the new generation
			if err != nil {
				if method == http.MethodPost {
					log.Warn("admin request failed", "path", path, "err", err)
				}
				writeError(w, err)
				return
			}
			if v != nil {
				writeJSON(w, http.StatusOK, v)
			}
		})
	}
	post := func(path string, fn func(w http.ResponseWriter, r *http.Request) (any, error)) {
		route(http.MethodPost, path, fn)
	}
	get := func(path string, fn func(w http.ResponseWriter, r *http.Request) (any, error)) {
		route(http.MethodGet, path, fn)
	}
	decodeBody := func(r *http.Request, v any) error {
		dec := json.NewDecoder(io.LimitReader(r.Body, 1<<20))
		dec.DisallowUnknownFields()
		if err := dec.Decode(v); err != nil {
			return amp.Named(0, "bad_request", "the request body is not the expected json")
		}
		return nil
	}
	post("/v1/import", func(w http.ResponseWriter, r *http.Request) (any, error) {
		q := r.URL.Query()
		res, err := s.Import(r.Context(), http.MaxBytesReader(w, r.Body, maxUpload), resolver.ImportOptions{AllowDowngrade: q.Get("allow_downgrade") == "1",
			Source: q.Get("source")})
		if err == nil {
			log.Info("bundle imported through the admin socket", "bundle_id", res.BundleID, "version", res.Version,
				"previous", res.PreviousVersion, "downgrade", res.Downgrade, "unchanged", res.Unchanged)
		}
		return res, err
	})
	post("/v1/remove", func(w http.ResponseWriter, r *http.Request) (any, error) {
		var req struct {
			BundleID string `json:"bundle_id"`
		}
		if err := decodeBody(r, &req); err != nil {
			return nil, err
		}
		v, err := s.Remove(req.BundleID)
		if err != nil {
			return nil, err
		}
		log.Info("bundle removed through the admin socket", "bundle_id", req.BundleID, "version", v)
		return map[string]any{"bundle_id": req.BundleID, "version": v}, nil
	})
	post("/v1/trust/add", func(w http.ResponseWriter, r *http.Request) (any, error) {
		var req struct {
			Name   string   `json:"name"`
			Key    string   `json:"key"`
			Scopes []string `json:"scopes"`
			// Threshold, when set, is also set for each scope, in the
			// same transaction (resolver.Store.TrustAddWithThreshold).
			Threshold *int `json:"threshold,omitempty"`
		}
		if err := decodeBody(r, &req); err != nil {
			return nil, err
		}
		pub, err := didKeyPublic(req.Key)
		if err != nil {
			return nil, err
		}
		threshold := 0
		if req.Threshold != nil {
			threshold = *req.Threshold
			err = s.TrustAddWithThreshold(req.Name, pub, req.Scopes, threshold)
		} else {
			err = s.TrustAdd(req.Name, pub, req.Scopes)
		}
		if err != nil {
			return nil, err
		}
		log.Info("key trusted through the admin socket", "name", req.Name, "key", req.Key, "scopes", req.Scopes, "threshold", threshold)
		return map[string]any{"name": req.Name}, nil
	})
	post("/v1/trust/threshold", func(w http.ResponseWriter, r *http.Request) (any, error) {
		var req struct {
			Scope     string `json:"scope"`
			Threshold int    `json:"threshold"`
		}
		if err := decodeBody(r, &req); err != nil {
			return nil, err
		}
		if err := s.TrustSetThreshold(req.Scope, req.Threshold); err != nil {
			return nil, err
		}
		log.Info("threshold set through the admin socket", "scope", req.Scope, "threshold", req.Threshold)
		return map[string]any{"scope": req.Scope, "threshold": req.Threshold}, nil
	})
	get("/v1/trust/thresholds", func(w http.ResponseWriter, r *http.Request) (any, error) {
		return s.TrustThresholds()
	})
	get("/v1/trust/chains", func(w http.ResponseWriter, r *http.Request) (any, error) {
		return s.TrustChains()
	})
	post("/v1/trust/policy", func(w http.ResponseWriter, r *http.Request) (any, error) {
		// One byte more than a policy may have: ParseTrustPolicy names it.
		data, err := io.ReadAll(io.LimitReader(r.Body, resolver.MaxTrustPolicySize+1))
		if err != nil {
			return nil, amp.Named(0, "bad_request", "cannot read the trust policy")
		}
		res, err := s.ApplyTrustPolicyFile(data)
		if err != nil {
			return nil, err
		}
		log.Info("trust policy applied through the admin socket", "added", res.Added, "thresholds", len(res.Thresholds), "unchanged", res.Unchanged)
		return res, nil
	})
	get("/v1/freshness", func(w http.ResponseWriter, r *http.Request) (any, error) {
		pol, err := s.FreshnessPolicy()
		if pol == nil {
			pol = []resolver.Freshness{}
		}
		return pol, err
	})
	post("/v1/freshness", func(w http.ResponseWriter, r *http.Request) (any, error) {
		var req freshnessRequest
		if err := decodeBody(r, &req); err != nil {
			return nil, err
		}
		maxAge := time.Duration(req.MaxAgeSeconds) * time.Second
		if req.MaxAgeSeconds > uint64(math.MaxInt64/int64(time.Second)) {
			return nil, amp.Named(0, resolver.ErrInvalidTrust, "max_age_seconds is too large")
		}
		if err := s.SetFreshnessPolicy(req.Scope, req.MaxVersions, maxAge); err != nil {
			return nil, err
		}
		log.Info("freshness policy set through the admin socket", "scope", req.Scope)
		return map[string]any{"scope": req.Scope}, nil
	})
	post("/v1/freshness/reset", func(w http.ResponseWriter, r *http.Request) (any, error) {
		var req struct {
			BundleID string `json:"bundle_id"`
		}
		if err := decodeBody(r, &req); err != nil {
			return nil, err
		}
		v, err := s.ResetHeartbeat(req.BundleID)
		if err != nil {
			return nil, err
		}
		log.Info("heartbeat reset through the admin socket", "bundle_id", req.BundleID, "forgotten_version", v)
		return map[string]any{"bundle_id": req.BundleID, "forgotten_version": v}, nil
	})
	post("/v1/trust/remove", func(w http.ResponseWriter, r *http.Request) (any, error) {
		var req struct {
			Name       string `json:"name"`
			FailClosed bool   `json:"fail_closed,omitempty"`
		}
		if err := decodeBody(r, &req); err != nil {
			return nil, err
		}
		failed := []string{}
		if req.FailClosed {
			f, err := s.TrustRemoveFailClosed(req.Name)
			if err != nil {
				return nil, err
			}
			failed = append(failed, f...)
		} else if err := s.TrustRemove(req.Name); err != nil {
			return nil, err
		}
		log.Info("key no longer trusted, through the admin socket", "name", req.Name, "failed_closed", failed)
		return map[string]any{"name": req.Name, "failed_closed": failed}, nil
	})
	get("/v1/trust", func(w http.ResponseWriter, r *http.Request) (any, error) {
		keys, err := s.TrustList()
		out := []TrustKey{}
		for _, k := range keys {
			out = append(out, TrustKey{Name: k.Name, Key: k.DID(), Scopes: k.Scopes, AddedAt: k.AddedAt, Except: k.Except})
		}
		return out, err
	})
	get("/v1/generation", func(w http.ResponseWriter, r *http.Request) (any, error) {
		return map[string]uint64{"generation": s.Generation()}, nil
	})
	get("/v1/bundles", func(w http.ResponseWriter, r *http.Request) (any, error) {
		bs, err := s.Bundles()
		if bs == nil {
			bs = []resolver.Bundle{}
		}
		return bs, err
	})
	get("/v1/catalog", func(w http.ResponseWriter, r *http.Request) (any, error) {
		c, err := s.Catalog()
		if err != nil {
			return nil, err
		}
		out := Catalog{Generation: c.Generation, Aliases: c.Aliases, Entries: []CatalogEntry{}}
		for _, name := range c.Names {
			for _, e := range c.ByName[name] {
				out.Entries = append(out.Entries, CatalogEntry{BundleID: e.BundleID, Descriptor: e.Descriptor})
			}
		}
		return out, nil
	})
	get("/v1/check", func(w http.ResponseWriter, r *http.Request) (any, error) {
		ps, err := s.Check()
		if ps == nil {
			ps = []resolver.Problem{}
		}
		return ps, err
	})
	get("/v1/audit", func(w http.ResponseWriter, r *http.Request) (any, error) {
		entries, err := s.Audit()
		if err != nil {
			return nil, err
		}
		head, err := s.AuditHead()
		if err != nil {
			return nil, err
		}
		doc := auditDoc{Entries: entries, Head: fmt.Sprintf("%x", head), Verified: true}
		if verr := s.VerifyAudit(); verr != nil {
			doc.Verified = false
			e := amp.AsError(verr)
			doc.Error = &errorDoc{}
			doc.Error.Error.Code, doc.Error.Error.Message = string(amp.NameOf(e)), e.Message
		}
		return doc, nil
	})
	get("/v1/export", func(w http.ResponseWriter, r *http.Request) (any, error) {
		// Buffer-free streaming would commit to a 200 before the last
		// artifact is checked; a failed check must be an error, so the
		// export is checked into a temporary file first.
		tmp, err := os.CreateTemp("", "ampbundle-export-*")
		if err != nil {
			return nil, amp.Named(0, resolver.ErrStoreIO, "cannot stage the export").WithCause(err)
		}
		defer os.Remove(tmp.Name())
		defer tmp.Close()
		if err := s.Export(r.URL.Query().Get("bundle_id"), tmp); err != nil {
			return nil, err
		}
		if _, err := tmp.Seek(0, io.SeekStart); err != nil {
			return nil, amp.Named(0, resolver.ErrStoreIO, "cannot stage the export").WithCause(err)
		}
		w.Header().Set("Content-Type", "application/ampbundle")
		w.WriteHeader(http.StatusOK)
		io.Copy(w, tmp)
		return nil, nil
	})
	post("/v1/resolve", func(w http.ResponseWriter, r *http.Request) (any, error) {
		var req resolveRequest
		if err := decodeBody(r, &req); err != nil {
			return nil, err
		}
		h, err := hex.DecodeString(req.Hash)
		if err != nil {
			return nil, amp.Named(0, "bad_request", "the hash is not hex")
		}
		data, err := s.Resolve(capability.SchemaRef{BundleID: req.BundleID, ArtifactKey: req.ArtifactKey, HashAlg: req.HashAlg, Hash: h})
		if err != nil {
			return nil, err
		}
		return map[string]string{"data": base64.StdEncoding.EncodeToString(data)}, nil
	})
	// Signed statements (revocation, rotation, heartbeat): applied by the
	// agent's store exactly as 'ampbundle import FILE' applies them, so
	// that a revocation reaches a running agent without stopping it.
	readStatement := func(w http.ResponseWriter, r *http.Request) ([]byte, error) {
		data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxStatement+1))
		if err != nil || len(data) > maxStatement {
			return nil, amp.Named(0, "limit_exceeded", "a statement is at most %d bytes", maxStatement)
		}
		return data, nil
	}
	for kind, apply := range map[string]func([]byte) (any, error){
		"revocation": func(d []byte) (any, error) { return s.ApplyRevocation(d) },
		"rotation":   func(d []byte) (any, error) { return s.ApplyRotation(d) },
		"heartbeat":  func(d []byte) (any, error) { return s.ApplyHeartbeat(d) },
	} {
		post("/v1/statements/"+kind, func(w http.ResponseWriter, r *http.Request) (any, error) {
			data, err := readStatement(w, r)
			if err != nil {
				return nil, err
			}
			res, err := apply(data)
			if err != nil {
				return nil, err
			}
			log.Info("statement applied through the admin socket", "kind", kind)
			return res, nil
		})
	}
	get("/v1/statements", func(w http.ResponseWriter, r *http.Request) (any, error) {
		return s.Statements()
	})
	get("/v1/heartbeats", func(w http.ResponseWriter, r *http.Request) (any, error) {
		return s.Heartbeats()
	})
	get("/v1/statements/has", func(w http.ResponseWriter, r *http.Request) (any, error) {
		sum, err := hex.DecodeString(r.URL.Query().Get("sha256"))
		if err != nil || len(sum) != 32 {
			return nil, amp.Named(0, "bad_request", "sha256 must be 64 hex digits")
		}
		has, err := s.HasStatement(sum)
		if err != nil {
			return nil, err
		}
		return map[string]bool{"has": has}, nil
	})
	return peerCheck(mux)
}

// peerCheck serves only connections from this process's user, as recorded
// by ConnContext; a request whose peer is unknown is refused (the socket's
// mode already restricts it; this holds where modes are not enforced).
func peerCheck(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if uid, ok := r.Context().Value(peerUIDKey{}).(int); !ok || uid < 0 || uid != os.Getuid() {
			writeJSON(w, http.StatusForbidden, map[string]any{"error": map[string]string{"code": "forbidden", "message": "only the agent's user may administer it"}})
			return
		}
		h.ServeHTTP(w, r)
	})
}

type peerUIDKey struct{}

// Listen creates the admin socket at path, mode 0600. A socket file left by
// an agent that is gone is replaced; one that answers belongs to a running
// agent, and Listen refuses (two agents on one store cannot both run).
func Listen(path string) (net.Listener, error) {
	if st, err := os.Lstat(path); err == nil {
		if st.Mode()&os.ModeSocket == 0 {
			return nil, amp.Named(0, "admin_socket", "the admin socket path exists and is not a socket")
		}
		if c, err := net.DialTimeout("unix", path, 200*time.Millisecond); err == nil {
			c.Close()
			return nil, amp.Named(0, "admin_socket", "another agent already listens on the admin socket")
		}
		if err := os.Remove(path); err != nil {
			return nil, amp.Named(0, "admin_socket", "cannot remove a stale admin socket").WithCause(err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, amp.Named(0, "admin_socket", "cannot check the admin socket path").WithCause(err)
	}
	// Create it inaccessible to others from the start, then make sure.
	ln, err := listenPrivate(path)
	if err != nil {
		return nil, amp.Named(0, "admin_socket", "cannot listen on the admin socket").WithCause(err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, amp.Named(0, "admin_socket", "cannot restrict the admin socket").WithCause(err)
	}
	return ln, nil
}

// Client talks to a running agent's admin socket. Its methods mirror
// resolver.Store's.
type Client struct {
	path string
	http *http.Client
	gen  atomic.Uint64

	mu    sync.Mutex
	audit *auditDoc // the snapshot Audit, AuditHead and VerifyAudit share
}

// Dial connects to the admin socket at path; it fails fast when nothing
// listens there.
func Dial(path string) (*Client, error) {
	c, err := net.DialTimeout("unix", path, 500*time.Millisecond)
	if err != nil {
		return nil, amp.Named(0, "admin_socket", "no agent answers on the admin socket").WithCause(err)
	}
	c.Close()
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", path)
	}}
	return &Client{path: path, http: &http.Client{Transport: tr}}, nil
}

// Path returns the socket path.
func (c *Client) Path() string { return c.path }

// Generation is the store's generation as of the last answer (0 before
// the first): FetchGeneration asks the agent for the current one.
func (c *Client) Generation() uint64 { return c.gen.Load() }

// FetchGeneration asks the agent for its store's generation now, and
// returns it (Generation then returns it too). Every commit of the agent,
// whoever made it, bumps it: a reader that compares it with the
// generation it last read sees every change. An agent older than this
// program, without GET /v1/generation, is asked for its bundle list
// instead, whose answer carries the generation as every answer does.
func (c *Client) FetchGeneration() (uint64, error) {
	var doc struct {
		Generation uint64 `json:"generation"`
	}
	err := c.do(context.Background(), http.MethodGet, "/v1/generation", nil, "", &doc)
	if amp.NameOf(err) == resolver.ErrUnsupported {
		_, err = c.Bundles()
	}
	if err != nil {
		return 0, err
	}
	return c.gen.Load(), nil
}

// Close releases the client's connections.
func (c *Client) Close() error { c.http.CloseIdleConnections(); return nil }

func (c *Client) do(ctx context.Context, method, path string, body io.Reader, ct string, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, "http://agent"+path, body)
	if err != nil {
		return amp.Named(0, "admin_socket", "cannot build the admin request").WithCause(err)
	}
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return amp.Named(0, "admin_socket", "the agent did not answer on the admin socket").WithCause(err)
	}
	defer resp.Body.Close()
	if g, err := strconv.ParseUint(resp.Header.Get(GenerationHeader), 10, 64); err == nil {
		c.gen.Store(g)
	}
	if resp.StatusCode != http.StatusOK {
		var doc errorDoc
		if json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&doc) != nil || doc.Error.Code == "" {
			if resp.StatusCode == http.StatusNotFound {
				// No such route: an agent older than this program.
				return amp.Named(0, resolver.ErrUnsupported, "the agent's admin socket does not offer %s (an older agent: restart it with this version)", path)
			}
			return amp.Named(0, "admin_socket", "the agent answered http %d", resp.StatusCode)
		}
		e := amp.Named(amp.Code(doc.Error.AMPCode), amp.ErrName(doc.Error.Code), "%s", doc.Error.Message)
		if len(doc.Error.Details) > 0 {
			e = e.WithDetails(doc.Error.Details)
		}
		return e
	}
	if w, ok := out.(io.Writer); ok {
		if _, err := io.Copy(w, resp.Body); err != nil {
			return amp.Named(0, "admin_socket", "the agent's answer was cut off").WithCause(err)
		}
		return nil
	}
	if out == nil {
		return nil
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(out); err != nil {
		return amp.Named(0, "admin_socket", "the agent's answer does not decode").WithCause(err)
	}
	return nil
}

func jsonBody(v any) (io.Reader, string) {
	b, _ := json.Marshal(v)
	return bytes.NewReader(b), "application/json"
}

// Import uploads a bundle; the agent verifies and installs it.
func (c *Client) Import(ctx context.Context, r io.Reader, opts resolver.ImportOptions) (*resolver.ImportResult, error) {
	v := url.Values{}
	if opts.AllowDowngrade {
		v.Set("allow_downgrade", "1")
	}
	if opts.Source != "" {
		v.Set("source", opts.Source) // an older agent ignores it
	}
	q := ""
	if len(v) > 0 {
		q = "?" + v.Encode()
	}
	var res resolver.ImportResult
	if opts.Progress != nil {
		r = &progressReader{r: r, fn: opts.Progress}
	}
	if err := c.do(ctx, http.MethodPost, "/v1/import"+q, r, "application/ampbundle", &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// Remove removes an installed bundle.
func (c *Client) Remove(bundleID string) (uint64, error) {
	var res struct {
		Version uint64 `json:"version"`
	}
	body, ct := jsonBody(map[string]string{"bundle_id": bundleID})
	err := c.do(context.Background(), http.MethodPost, "/v1/remove", body, ct, &res)
	return res.Version, err
}

// TrustAdd trusts a key.
func (c *Client) TrustAdd(name string, key ed25519.PublicKey, scopes []string) error {
	body, ct := jsonBody(map[string]any{"name": name, "key": amp.DIDKey(key), "scopes": scopes})
	return c.do(context.Background(), http.MethodPost, "/v1/trust/add", body, ct, nil)
}

// TrustRemove stops trusting a key.
func (c *Client) TrustRemove(name string) error {
	body, ct := jsonBody(map[string]string{"name": name})
	return c.do(context.Background(), http.MethodPost, "/v1/trust/remove", body, ct, nil)
}

// TrustRemoveFailClosed stops trusting a key and fails closed the
// installed bundles left below their threshold
// (resolver.Store.TrustRemoveFailClosed).
func (c *Client) TrustRemoveFailClosed(name string) ([]string, error) {
	body, ct := jsonBody(map[string]any{"name": name, "fail_closed": true})
	var res struct {
		FailedClosed []string `json:"failed_closed"`
	}
	if err := c.do(context.Background(), http.MethodPost, "/v1/trust/remove", body, ct, &res); err != nil {
		return nil, err
	}
	return res.FailedClosed, nil
}

// TrustList lists the trusted keys.
func (c *Client) TrustList() ([]resolver.TrustKey, error) {
	var keys []TrustKey
	if err := c.do(context.Background(), http.MethodGet, "/v1/trust", nil, "", &keys); err != nil {
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

// Bundles lists the installed bundles.
func (c *Client) Bundles() ([]resolver.Bundle, error) {
	var bs []resolver.Bundle
	return bs, c.do(context.Background(), http.MethodGet, "/v1/bundles", nil, "", &bs)
}

// Catalog returns the installed descriptors.
func (c *Client) Catalog() (*resolver.Catalog, error) {
	var doc Catalog
	if err := c.do(context.Background(), http.MethodGet, "/v1/catalog", nil, "", &doc); err != nil {
		return nil, err
	}
	cat := &resolver.Catalog{Generation: doc.Generation, Aliases: doc.Aliases, ByName: map[string][]resolver.Entry{}}
	for _, e := range doc.Entries {
		name := e.Descriptor.Name
		if _, seen := cat.ByName[name]; !seen {
			cat.Names = append(cat.Names, name)
		}
		cat.ByName[name] = append(cat.ByName[name], resolver.Entry{Descriptor: e.Descriptor, BundleID: e.BundleID})
	}
	return cat, nil
}

// Check runs the store check in the agent.
func (c *Client) Check() ([]resolver.Problem, error) {
	var ps []resolver.Problem
	return ps, c.do(context.Background(), http.MethodGet, "/v1/check", nil, "", &ps)
}

// auditSnapshot fetches the audit log, chain head and verdict in one
// request, once per Client: Audit, AuditHead and VerifyAudit of one Client
// describe the same moment (a later change needs a new Client).
func (c *Client) auditSnapshot() (*auditDoc, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.audit != nil {
		return c.audit, nil
	}
	var doc auditDoc
	if err := c.do(context.Background(), http.MethodGet, "/v1/audit", nil, "", &doc); err != nil {
		return nil, err
	}
	c.audit = &doc
	return c.audit, nil
}

// Audit returns the audit log, oldest first.
func (c *Client) Audit() ([]resolver.AuditEntry, error) {
	doc, err := c.auditSnapshot()
	if err != nil {
		return nil, err
	}
	return doc.Entries, nil
}

// AuditHead returns the hash of the last audit entry.
func (c *Client) AuditHead() ([]byte, error) {
	doc, err := c.auditSnapshot()
	if err != nil {
		return nil, err
	}
	return hex.DecodeString(doc.Head)
}

// VerifyAudit checks the audit chain (in the agent).
func (c *Client) VerifyAudit() error {
	doc, err := c.auditSnapshot()
	if err != nil {
		return err
	}
	if !doc.Verified && doc.Error != nil {
		return amp.Named(0, amp.ErrName(doc.Error.Error.Code), "%s", doc.Error.Error.Message)
	}
	return nil
}

// Export writes an installed bundle to w, byte-identical to the file
// imported (checked by the agent before it sends anything).
func (c *Client) Export(bundleID string, w io.Writer) error {
	return c.do(context.Background(), http.MethodGet, "/v1/export?bundle_id="+url.QueryEscape(bundleID), nil, "", w)
}

// Resolve returns the verified bytes of a schema reference.
func (c *Client) Resolve(ref capability.SchemaRef) ([]byte, error) {
	body, ct := jsonBody(resolveRequest{BundleID: ref.BundleID, ArtifactKey: ref.ArtifactKey, HashAlg: ref.HashAlg, Hash: hex.EncodeToString(ref.Hash)})
	var res struct {
		Data string `json:"data"`
	}
	if err := c.do(context.Background(), http.MethodPost, "/v1/resolve", body, ct, &res); err != nil {
		return nil, err
	}
	b, err := base64.StdEncoding.DecodeString(res.Data)
	if err != nil {
		return nil, amp.Named(0, "admin_socket", "the agent's answer does not decode")
	}
	return b, nil
}

// applyStatement uploads a signed statement to path and decodes the
// store's result into res.
func (c *Client) applyStatement(path string, data []byte, res any) error {
	return c.do(context.Background(), http.MethodPost, path, bytes.NewReader(data), "application/cbor", res)
}

// ApplyRevocation has the agent's store apply a revocation statement
// (resolver.Store.ApplyRevocation).
func (c *Client) ApplyRevocation(data []byte) (*resolver.RevokeResult, error) {
	var res resolver.RevokeResult
	if err := c.applyStatement("/v1/statements/revocation", data, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// ApplyRotation has the agent's store apply a trust statement
// (resolver.Store.ApplyRotation).
func (c *Client) ApplyRotation(data []byte) (*resolver.RotateResult, error) {
	var res resolver.RotateResult
	if err := c.applyStatement("/v1/statements/rotation", data, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// ApplyHeartbeat has the agent's store apply a heartbeat statement
// (resolver.Store.ApplyHeartbeat).
func (c *Client) ApplyHeartbeat(data []byte) (*resolver.HeartbeatResult, error) {
	var res resolver.HeartbeatResult
	if err := c.applyStatement("/v1/statements/heartbeat", data, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// TrustAddWithThreshold has the agent's store trust key as TrustAdd does
// and set the threshold of each scope to n, in one transaction
// (resolver.Store.TrustAddWithThreshold). An agent older than the
// threshold field refuses the body as not the expected json: that answer
// is unsupported here.
func (c *Client) TrustAddWithThreshold(name string, key ed25519.PublicKey, scopes []string, n int) error {
	body, ct := jsonBody(map[string]any{"name": name, "key": amp.DIDKey(key), "scopes": scopes, "threshold": n})
	err := c.do(context.Background(), http.MethodPost, "/v1/trust/add", body, ct, nil)
	if amp.NameOf(err) == "bad_request" {
		return amp.Named(0, resolver.ErrUnsupported, "the agent's admin socket does not take a threshold with trust add (an older agent: restart it with this version)")
	}
	return err
}

// TrustSetThreshold has the agent's store set the threshold of scope
// (resolver.Store.TrustSetThreshold).
func (c *Client) TrustSetThreshold(scope string, n int) error {
	body, ct := jsonBody(map[string]any{"scope": scope, "threshold": n})
	return c.do(context.Background(), http.MethodPost, "/v1/trust/threshold", body, ct, nil)
}

// TrustThresholds lists the thresholds of the agent's store
// (resolver.Store.TrustThresholds).
func (c *Client) TrustThresholds() (map[string]int, error) {
	out := map[string]int{}
	if err := c.do(context.Background(), http.MethodGet, "/v1/trust/thresholds", nil, "", &out); err != nil {
		return nil, err
	}
	return out, nil
}

// TrustChains lists the trust statement chains of the agent's store
// (resolver.Store.TrustChains).
func (c *Client) TrustChains() (map[string]uint64, error) {
	out := map[string]uint64{}
	if err := c.do(context.Background(), http.MethodGet, "/v1/trust/chains", nil, "", &out); err != nil {
		return nil, err
	}
	return out, nil
}

// ApplyTrustPolicyFile has the agent's store parse and apply the trust
// policy file data (resolver.Store.ApplyTrustPolicyFile).
func (c *Client) ApplyTrustPolicyFile(data []byte) (*resolver.PolicyResult, error) {
	var res resolver.PolicyResult
	if err := c.do(context.Background(), http.MethodPost, "/v1/trust/policy", bytes.NewReader(data), "application/json", &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// FreshnessPolicy lists the staleness bounds of the agent's store
// (resolver.Store.FreshnessPolicy).
func (c *Client) FreshnessPolicy() ([]resolver.Freshness, error) {
	var out []resolver.Freshness
	if err := c.do(context.Background(), http.MethodGet, "/v1/freshness", nil, "", &out); err != nil {
		return nil, err
	}
	return out, nil
}

// SetFreshnessPolicy has the agent's store set the staleness bounds of
// scope (resolver.Store.SetFreshnessPolicy); maxAge is sent in whole
// seconds.
func (c *Client) SetFreshnessPolicy(scope string, maxVersions *uint64, maxAge time.Duration) error {
	body, ct := jsonBody(freshnessRequest{Scope: scope, MaxVersions: maxVersions, MaxAgeSeconds: uint64(maxAge / time.Second)})
	return c.do(context.Background(), http.MethodPost, "/v1/freshness", body, ct, nil)
}

// ResetHeartbeat has the agent's store forget the heartbeat of the line
// bundleID (resolver.Store.ResetHeartbeat).
func (c *Client) ResetHeartbeat(bundleID string) (uint64, error) {
	body, ct := jsonBody(map[string]string{"bundle_id": bundleID})
	var res struct {
		Version uint64 `json:"forgotten_version"`
	}
	err := c.do(context.Background(), http.MethodPost, "/v1/freshness/reset", body, ct, &res)
	return res.Version, err
}

// Statements lists the signed trust and revocation statements the agent's
// store applied, in order (resolver.Store.Statements). Bytes that do not
// hash to the statement's SHA-256 are refused.
func (c *Client) Statements() ([]resolver.Statement, error) {
	var out []resolver.Statement
	if err := c.do(context.Background(), http.MethodGet, "/v1/statements", nil, "", &out); err != nil {
		return nil, err
	}
	for _, st := range out {
		if err := ownBytes(st.Data, st.SHA256, "statement"); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Heartbeats lists the heartbeats the agent's store keeps
// (resolver.Store.Heartbeats). Bytes that do not hash to the heartbeat's
// SHA-256 are refused.
func (c *Client) Heartbeats() ([]resolver.KeptHeartbeat, error) {
	var out []resolver.KeptHeartbeat
	if err := c.do(context.Background(), http.MethodGet, "/v1/heartbeats", nil, "", &out); err != nil {
		return nil, err
	}
	for _, h := range out {
		if h.Data == nil {
			continue // the store does not have them
		}
		if err := ownBytes(h.Data, h.SHA256, "heartbeat"); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// ownBytes refuses an answer that lists a statement (what names it)
// whose bytes data do not hash to its SHA-256 sum.
func ownBytes(data, sum []byte, what string) error {
	if got := sha256.Sum256(data); !bytes.Equal(got[:], sum) {
		return amp.Named(0, "admin_socket", "the agent's answer lists a %s whose bytes are not its own", what)
	}
	return nil
}

// HasStatement reports whether the agent's store applied the statement
// whose SHA-256 is sum (resolver.Store.HasStatement).
func (c *Client) HasStatement(sum []byte) (bool, error) {
	var res struct {
		Has bool `json:"has"`
	}
	err := c.do(context.Background(), http.MethodGet, "/v1/statements/has?sha256="+hex.EncodeToString(sum), nil, "", &res)
	return res.Has, err
}

func didKeyPublic(s string) (ed25519.PublicKey, error) {
	doc, err := amp.DIDKeyDocument(s)
	if err == nil {
		for _, m := range doc.Methods {
			if m.KeyType == amp.KeyEd25519 {
				return ed25519.PublicKey(m.PublicKey), nil
			}
		}
	}
	return nil, amp.Named(0, resolver.ErrInvalidTrust, "the key must be an ed25519 did:key")
}

type progressReader struct {
	r  io.Reader
	n  int64
	fn func(int64)
}

func (p *progressReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	p.n += int64(n)
	p.fn(p.n)
	return n, err
}

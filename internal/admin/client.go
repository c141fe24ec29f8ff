package admin

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/internal/cliutil"
	"github.com/ampbundle/ampbundle/resolver"
)

// Client talks to a running agent's admin socket: a Registry whose
// operations run in the agent.
type Client struct {
	Registry
	path  string
	store string // the store file every request names (DialStore); "": none
	http  *http.Client
	gen   atomic.Uint64
}

// Dial connects to the admin socket at path; it fails fast when nothing
// listens there, and refuses (admin_socket) a socket served by a process
// of another user than this one's: every connection the Client makes is
// checked so (dialOwn) before a byte of a request is sent, as the server
// serves only its own user (peerCheck).
func Dial(path string) (*Client, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	c, err := dialOwn(ctx, path)
	cancel()
	if err != nil {
		return nil, err
	}
	c.Close()
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return dialOwn(ctx, path)
	}}
	ac := &Client{path: path, http: &http.Client{Transport: tr}}
	ac.Registry.client = ac
	return ac, nil
}

// DialStore is Dial for a command about the store file db: every
// request names db's file (StoreFileHeader) and the agent refuses it
// when that is not the store it serves (storeCheck), before anything is
// done; DialStore asks once at once, so that the refusal comes before
// the command goes on (cause ErrOtherStore, with the operator's next
// step as its hint). The socket's path says nothing of the store behind
// it: a link put at DB.admin.sock to another agent of this user (of
// another store) passes Dial's user check, and the command's bundles,
// trust changes and statements went to that store
// (docs/SPEC-DECISIONS.md ADMIN-8). An agent older than this program
// ignores the name and serves as before.
func DialStore(path, db string) (*Client, error) {
	id, err := storeFileID(db)
	if err != nil {
		return nil, amp.Named(0, "admin_socket", "cannot identify the store file to name it to the agent").WithCause(err)
	}
	c, err := Dial(path)
	if err != nil {
		return nil, err
	}
	c.store = id
	if _, err := c.FetchGeneration(); errors.Is(err, ErrOtherStore) {
		c.Close()
		return nil, err
	}
	return c, nil
}

// otherStoreHint is the operator's next step after the agent at path
// refused the command's store as not its own (ErrOtherStore).
func otherStoreHint(path string) string {
	return fmt.Sprintf("the agent listening at %s serves another store than the one given with --db, and nothing was sent to it to do: give this store's agent socket with --admin-socket, or, if nothing of yours should be at %s (a link someone put there), remove it", path, path)
}

// ErrForeignSocket is the cause of the admin_socket refusal of a socket
// served by another user than this process's (errors.Is): not an agent
// of this store's user, whatever listens there.
var ErrForeignSocket = errors.New("the admin socket is another user's")

// ForeignSocketHint is the operator's next step after Dial refused the
// socket at path as another user's (ErrForeignSocket): nothing was sent
// to it. Dial's refusal carries it (cliutil.WithHint), so every command
// that reads a held store through the socket shows it by reporting that
// refusal (docs/SPEC-DECISIONS.md ADMIN-1, ADMIN-5), never the store's
// store_in_use, which sends the operator looking for a command or an
// agent instead.
func ForeignSocketHint(path string) string {
	return fmt.Sprintf("another user's process listens at %s, where the agent's admin socket should be, and nothing was sent to it: give the agent's socket with --admin-socket, keep stores out of folders others may write, and remove that socket", path)
}

// foreignListenerHint is the operator's next step after Listen refused
// to start where another user's process answers at path: the agent
// cannot serve its store's socket there, and that process is no agent of
// this user (ADMIN-5).
func foreignListenerHint(path string) string {
	return fmt.Sprintf("another user's process listens at %s, where this agent's admin socket goes, and it is no agent of this user: remove that socket (or have its user stop that process), keep stores out of folders others may write, or give this agent another socket with --admin-socket", path)
}

// dialOwn connects to the admin socket at path and keeps the connection
// only when the process that listens there is of this process's user
// (SO_PEERCRED, LOCAL_PEERCRED: the server's credentials, which no file
// mode or owner of the path can forge). A socket another user created
// where the agent's should be (a folder others may write, an agent
// listening elsewhere or not yet) would otherwise be sent the operator's
// bundles, trust changes and statements, and have its forged answers
// printed as the store's. Where the system cannot tell the peer, every
// socket is refused, as the server refuses every peer there.
func dialOwn(ctx context.Context, path string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return nil, amp.Named(0, "admin_socket", "no agent answers on the admin socket").WithCause(err)
	}
	switch uid := connUID(c); {
	case uid < 0:
		c.Close()
		return nil, amp.Named(0, "admin_socket", "cannot tell which user serves the admin socket; refusing it")
	case uid != os.Getuid():
		c.Close()
		return nil, cliutil.WithHint(amp.Named(0, "admin_socket", "the admin socket is served by another user (uid %d), not this one (uid %d); refusing it", uid, os.Getuid()).WithCause(ErrForeignSocket),
			ForeignSocketHint(path))
	}
	return c, nil
}

// Path returns the socket path.
func (c *Client) Path() string { return c.path }

// Generation is the store's generation as of the last answer (0 before
// the first): FetchGeneration asks the agent for the current one.
func (c *Client) Generation() uint64 { return c.gen.Load() }

// Close releases the client's connections.
func (c *Client) Close() error { c.http.CloseIdleConnections(); return nil }

// Call sends req to the agent as op's route and decodes its answer.
func Call[Req, Resp any](c *Client, op *Op[Req, Resp], req Req) (Resp, error) {
	if op.send != nil {
		return op.send(c, req)
	}
	var resp Resp
	var body io.Reader
	path := op.Path
	switch {
	case op.Raw > 0:
		body = bytes.NewReader(any(req).([]byte))
	case op.Method == http.MethodGet:
		b, _ := json.Marshal(req)
		var q map[string]string
		json.Unmarshal(b, &q)
		v := url.Values{}
		for k, s := range q {
			v.Set(k, s)
		}
		path = withQuery(path, v)
	default:
		b, _ := json.Marshal(req)
		body = bytes.NewReader(b)
	}
	ct := op.Type
	if body != nil && ct == "" {
		ct = "application/json"
	}
	return resp, c.do(context.Background(), op.Method, path, body, ct, &resp)
}

// withQuery is path with the query q (none when q is empty).
func withQuery(path string, q url.Values) string {
	if len(q) == 0 {
		return path
	}
	return path + "?" + q.Encode()
}

func (c *Client) do(ctx context.Context, method, path string, body io.Reader, ct string, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, "http://agent"+path, body)
	if err != nil {
		return amp.Named(0, "admin_socket", "cannot build the admin request").WithCause(err)
	}
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	if c.store != "" {
		req.Header.Set(StoreFileHeader, c.store)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		var refused *amp.Error
		if errors.As(err, &refused) && amp.NameOf(refused) == "admin_socket" {
			return refused // dialOwn's: no agent, or another user's socket
		}
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
		if c.store != "" && resp.StatusCode == statusOtherStore && doc.Error.Code == "admin_socket" {
			return cliutil.WithHint(e.WithCause(ErrOtherStore), otherStoreHint(c.path))
		}
		return e
	}
	if w, ok := out.(io.Writer); ok {
		if _, err := io.Copy(w, resp.Body); err != nil {
			return amp.Named(0, "admin_socket", "the agent's answer was cut off").WithCause(err)
		}
		return nil
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(out); err != nil {
		return amp.Named(0, "admin_socket", "the agent's answer does not decode").WithCause(err)
	}
	return nil
}

// ownBytes refuses an answer that lists a statement (what names it)
// whose bytes data do not hash to its SHA-256 sum.
func ownBytes(data, sum []byte, what string) error {
	if got := sha256.Sum256(data); !bytes.Equal(got[:], sum) {
		return amp.Named(0, "admin_socket", "the agent's answer lists a %s whose bytes are not its own", what)
	}
	return nil
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

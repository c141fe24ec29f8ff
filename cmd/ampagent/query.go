package main

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/capability"
	"github.com/ampbundle/ampbundle/client"
	"github.com/ampbundle/ampbundle/internal/cliutil"
	"github.com/ampbundle/ampbundle/transport"
	"github.com/ampbundle/ampbundle/transport/amphttp"
	"github.com/ampbundle/ampbundle/transport/ampstcp"
)

// maxShownCursor is the longest next-page cursor the human output prints
// (whole, escaped); a longer one is left to --json.
const maxShownCursor = 4096

func queryCommand(env *cliutil.Env) *cli.Command {
	return &cli.Command{
		Name:      "query",
		Usage:     "ask an agent which capabilities it serves (CAP_QUERY)",
		ArgsUsage: "URL",
		Description: `Sends a signed CAP_QUERY to the agent at URL (http:// or https://: the HTTP
binding, POST URL/amp/v1/messages, URL also given as that route itself;
amps:// or amp://: the TCP binding of
docs/TRANSPORT.md, --tls-ca for a private CA, plain amp:// only to a loopback
address unless --unsafe-plain-tcp), verifies the CAP_DECLARE it answers (the provider's
signature, sender, recipient and reply_to) and prints the descriptors.

The filter is exactly one of --capability NAME and --type T (a legacy
alias), optionally narrowed by --version RANGE. Results come in pages of at
most --limit descriptors, newest version first unless --order says
otherwise; a page that is not the last names the cursor of the next one
(--cursor, with the same filter and order), and --all follows every page:
at most 10,000 pages, 50,000 descriptors and 32 MiB of pages in all, and
never a cursor twice (past that, query_too_large, too_many_pages or
cursor_loop, and nothing is printed).

The caller is the identity in --key (ampagent keygen), by its did:key or by
--did. --to is the provider's DID: a did:key carries its own keys; any other
DID needs its DID document in --to-doc, to check the signed replies.`,
		Flags: append(clientFlags(),
			&cli.StringFlag{Name: "capability", Usage: "capability `NAME` to look for"},
			&cli.StringFlag{Name: "type", Usage: "legacy `TYPE` alias to look for"},
			&cli.StringFlag{Name: "version", Usage: "only versions in `RANGE` (\">=2.0.0 <3.0.0\")"},
			&cli.StringFlag{Name: "order", Usage: "`ORDER` of versions: newest-first (default) or oldest-first"},
			&cli.Uint64Flag{Name: "limit", Usage: "at most `N` descriptors per page (the agent may cap it) (default: not sent, the agent's page size)"},
			&cli.StringFlag{Name: "cursor", Usage: "continue after the page that returned `CURSOR`"},
			&cli.BoolFlag{Name: "all", Usage: "follow next_cursor to the last page"},
		),
		Action: func(c *cli.Context) error {
			q, err := queryFromFlags(c)
			if err != nil {
				return err
			}
			s, err := dial(env, c, false, 0)
			if err != nil {
				return err
			}
			defer s.close()
			var (
				descs []capability.Descriptor
				next  string
				pages int
			)
			if c.Bool("all") {
				// The client's default QueryLimits bound the pages, the
				// descriptors and the bytes kept, and refuse any cursor
				// named twice.
				if descs, pages, err = s.client.QueryAllPages(s.ctx, q); err != nil {
					if errors.Is(err, client.ErrQueryTooLarge) || errors.Is(err, client.ErrTooManyPages) {
						return cliutil.WithHint(err, "read the pages one at a time with --cursor, without --all")
					}
					return s.explain(err)
				}
			} else {
				d, _, err := s.client.Query(s.ctx, q)
				if err != nil {
					return s.explain(err)
				}
				descs, next, pages = d.Capabilities, d.NextCursor, 1
			}
			if c.Bool("json") {
				caps := make([]json.RawMessage, len(descs))
				for i, d := range descs {
					if caps[i], err = cliutil.MarshalJSON(d); err != nil {
						return amp.Wrap(amp.CodeBadRequest, err, "a descriptor has no json form")
					}
				}
				out := map[string]any{"provider": s.peer, "verified": true, "pages": pages, "capabilities": caps}
				if next != "" {
					out["next_cursor"] = next
				}
				return cliutil.PrintJSON(env.Stdout, out)
			}
			fmt.Fprintf(env.Stdout, "CAP_DECLARE from %s (signature and reply_to verified), %d page(s), %d capability version(s)\n",
				cliutil.Sanitize(s.peer), pages, len(descs))
			for _, d := range descs {
				printDescriptor(env.Stdout, d)
			}
			switch {
			case next == "":
			case len(next) <= maxShownCursor:
				// Whole (escaped): a cut cursor could not be passed back.
				fmt.Fprintf(env.Stdout, "more: --cursor %s\n", cliutil.SanitizeWhole(next))
			default:
				fmt.Fprintf(env.Stdout, "more: the agent's next cursor is %d bytes long; --json shows it (next_cursor)\n", len(next))
			}
			return nil
		},
	}
}

// queryFromFlags builds the CAP_QUERY body from the flags; every mistake is
// a usage error.
func queryFromFlags(c *cli.Context) (capability.Query, error) {
	var q capability.Query
	if err := cliutil.ExactArgs(c, 1, "the agent URL"); err != nil {
		return q, err
	}
	switch {
	case c.IsSet("capability") && c.IsSet("type"):
		return q, cliutil.Usagef("give --capability or --type, not both")
	case c.IsSet("capability"):
		var err error
		if q.Filter.Capability, err = capabilityFlag(c); err != nil {
			return q, err
		}
	case c.IsSet("type"):
		if q.Filter.Type = c.String("type"); q.Filter.Type == "" {
			return q, cliutil.Usagef("--type must not be empty")
		}
	default:
		return q, cliutil.WithHint(cliutil.Usagef("nothing to look for"), "give --capability NAME or --type T")
	}
	if err := setFlag(c, "version", &q.Filter.Version, capability.ParseRange); err != nil {
		return q, err
	}
	if c.IsSet("order") {
		switch o := capability.Order(c.String("order")); o {
		case capability.OrderNewestFirst, capability.OrderOldestFirst:
			q.Order = o
		default:
			return q, cliutil.Usagef("--order must be newest-first or oldest-first")
		}
	}
	var err error
	if q.Limit, err = countFlag(c, "limit", 0); err != nil {
		return q, err
	}
	if c.IsSet("cursor") {
		if q.Cursor = c.String("cursor"); q.Cursor == "" {
			return q, cliutil.Usagef("--cursor must not be empty")
		}
	}
	return q, nil
}

// setFlag sets *dst to the value of the flag name as parse reads it, when
// the flag is set; a value parse refuses is flagError's usage error.
func setFlag[T any](c *cli.Context, name string, dst *T, parse func(string) (T, error)) error {
	if !c.IsSet(name) {
		return nil
	}
	v, err := parse(c.String(name))
	if err != nil {
		return flagError(name, err)
	}
	*dst = v
	return nil
}

// capabilityFlag returns the capability name --capability gives (query
// and invoke), a name capability.ValidateName refuses being flagError's
// usage error.
func capabilityFlag(c *cli.Context) (string, error) {
	name := c.String("capability")
	if err := capability.ValidateName(name); err != nil {
		return "", flagError("capability", err)
	}
	return name, nil
}

// countFlag returns the value of the uint64 flag name (query's --limit,
// invoke's --timeout-ms), nil when it is not set; one below 1, or above
// most when most is not 0, is a usage error.
func countFlag(c *cli.Context, name string, most uint64) (*uint64, error) {
	if !c.IsSet(name) {
		return nil, nil
	}
	switch n := c.Uint64(name); {
	case most != 0 && (n == 0 || n > most):
		return nil, cliutil.Usagef("--%s must be between 1 and %d", name, most)
	case n == 0:
		return nil, cliutil.Usagef("--%s must be at least 1", name)
	default:
		return &n, nil
	}
}

// flagError is the usage error of a value of the flag name that err
// refuses: "--name: " and err's message.
func flagError(name string, err error) error {
	return cliutil.Usagef("--%s: %s", name, amp.AsError(err).Message)
}

// printDescriptor writes one descriptor for people: its id, what it
// supports, and where its schemas are. The descriptor comes from a peer (or
// a bundle): its text is shown through cliutil.Sanitize.
func printDescriptor(w io.Writer, d capability.Descriptor) {
	fmt.Fprintf(w, "%s\n", cliutil.Sanitize(d.ID().String()))
	if d.SupportedRanges != nil {
		fmt.Fprintf(w, "  supports:   %s\n", joinRanges(d.SupportedRanges))
	}
	if d.DeprecatedRanges != nil {
		fmt.Fprintf(w, "  deprecated: %s\n", joinRanges(d.DeprecatedRanges))
	}
	fmt.Fprintf(w, "  input:      %s\n", schemaRefText(d.InputSchema))
	fmt.Fprintf(w, "  output:     %s\n", schemaRefText(d.OutputSchema))
	if d.Notes != "" {
		fmt.Fprintf(w, "  notes:      %s\n", cliutil.Sanitize(d.Notes))
	}
}

func joinRanges(rs []capability.Range) string {
	if len(rs) == 0 {
		return "(none)"
	}
	s := make([]string, len(rs))
	for i, r := range rs {
		s[i] = fmt.Sprintf("%q", r.String())
	}
	return strings.Join(s, ", ")
}

func schemaRefText(r capability.SchemaRef) string {
	where := r.URI
	if r.BundleID != "" {
		where = r.BundleID + ":" + r.ArtifactKey
	}
	h := hex.EncodeToString(r.Hash)
	if len(h) > 16 {
		h = h[:16] + "…"
	}
	return fmt.Sprintf("%s (%s %s)", cliutil.Sanitize(where), cliutil.Sanitize(r.HashAlg), h)
}

// clientFlags are the flags query and invoke share: who calls whom, and how
// long to wait.
func clientFlags() []cli.Flag {
	return append([]cli.Flag{
		&cli.StringFlag{Name: "key", Usage: "caller identity `FILE` (ampagent keygen; mode 0600) (required)"},
		cliutil.PassphraseFileFlag(),
		&cli.StringFlag{Name: "did", Usage: "caller `DID` when it is not the did:key of --key (a did:web listing those keys)"},
		&cli.StringFlag{Name: "to", Usage: "the provider's `DID` (required)"},
		&cli.StringFlag{Name: "to-doc", Usage: "the provider's DID document `FILE` (JSON); required unless --to is a did:key"},
		&cli.DurationFlag{Name: "wait", Value: 60 * time.Second, Usage: "give up after `DURATION`, retries included"},
		&cli.BoolFlag{Name: "unsafe-plain-http", Usage: "allow http:// (no TLS) to an agent that is not on a loopback address"},
		jsonFlag,
	}, tcpClientFlags()...)
}

// errUnsafePlainHTTP names the refusal of plain http:// to an agent that
// is not on a loopback address, without --unsafe-plain-http (CLI-25).
const errUnsafePlainHTTP = amp.ErrName("unsafe_plain_http")

// session is a client of one provider over either binding, with the
// context that bounds the whole command.
type session struct {
	client    *client.Client
	cfg       client.Config // what client was made with (explain's PING)
	transport clientTransport
	peer      string
	ctx       context.Context
	cancel    context.CancelFunc
}

// clientTransport is a client transport of either binding.
type clientTransport interface {
	client.Transport
	Close()
}

func (s *session) close() {
	s.cancel()
	s.transport.Close()
}

// Client retry policy of the CLI: bounded, so that a command gives up in
// seconds rather than the library's minutes (RFC 001 §16.3 allows either).
const (
	cliRetryAttempts = 3
	cliRetryBase     = 500 * time.Millisecond
	cliRetryMax      = 4 * time.Second
)

// dial checks the shared flags and builds the client. Usage mistakes are
// found before any file is read. extra lengthens the deadline (an
// invocation's own timeout).
func dial(env *cliutil.Env, c *cli.Context, encrypt bool, extra time.Duration) (*session, error) {
	if err := cliutil.Require(c, "key", "to"); err != nil {
		return nil, err
	}
	base, u, err := agentURL(c)
	if err != nil {
		return nil, err
	}
	peer := c.String("to")
	if err := checkPeerDID(peer); err != nil {
		return nil, err
	}
	wait := c.Duration("wait")
	if wait <= 0 {
		return nil, cliutil.Usagef("--wait must be positive")
	}
	dids, err := peerDIDs(c, peer)
	if err != nil {
		return nil, err
	}
	id, err := loadIdentity(c, env, c.String("key"), c.String("did"))
	if err != nil {
		return nil, err
	}
	var tr clientTransport
	if u.Scheme == "amp" || u.Scheme == "amps" {
		tr, err = tcpTransport(c, base, id.DID)
	} else {
		// The host name passed agentURL; the address it resolves to
		// must be loopback too, unless --unsafe-plain-http (CLI-25).
		tr, err = amphttp.NewTransportWith(base, amphttp.TransportOptions{MaxConns: 2, PlainLoopbackOnly: !c.Bool("unsafe-plain-http")})
	}
	if err != nil {
		return nil, err
	}
	deadline := wait + extra
	cfg := client.Config{
		Identity: id, Peer: peer, Transport: tr, DIDs: dids, Now: env.Now, Rand: env.Rand,
		// A request outlives the command by a minute at most: the
		// provider keeps its reply (idempotency) for the ttl.
		TTL:     deadline + time.Minute,
		Encrypt: encrypt,
		Retry:   client.Retry{MaxAttempts: cliRetryAttempts, Base: cliRetryBase, Max: cliRetryMax},
	}
	cl, err := client.New(cfg)
	if err != nil {
		tr.Close()
		return nil, err
	}
	ctx, cancel := context.WithTimeout(c.Context, deadline)
	return &session{client: cl, cfg: cfg, transport: tr, peer: peer, ctx: ctx, cancel: cancel}, nil
}

// agentURL checks the agent URL argument (http, https, amp or amps, with
// a host; --tls-ca and --unsafe-plain-tcp only with amp and amps;
// --unsafe-plain-http only with http, which without it is for a loopback
// host only, as amp:// is) and
// returns the base the transport is given: the URL of the messages route
// itself is cut back to the agent's base URL.
func agentURL(c *cli.Context) (string, *url.URL, error) {
	base := strings.TrimRight(c.Args().First(), "/")
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "amp" && u.Scheme != "amps") || u.Host == "" {
		return "", nil, cliutil.WithHint(cliutil.Usagef("the agent URL must be http://, https://, amp:// or amps:// with a host"), "for example http://127.0.0.1:8080 or amps://agents.example.org:7443")
	}
	if (u.Scheme == "http" || u.Scheme == "https") && strings.HasSuffix(u.Path, amphttp.MessagesPath) && u.RawQuery == "" && u.Fragment == "" {
		// The URL of the messages route itself (as "ampagent serve" and
		// "demo" print it): the agent's base URL is what precedes it.
		base = strings.TrimSuffix(base, amphttp.MessagesPath)
	}
	if (c.IsSet("tls-ca") || c.Bool("unsafe-plain-tcp")) && u.Scheme != "amp" && u.Scheme != "amps" {
		return "", nil, cliutil.Usagef("--tls-ca and --unsafe-plain-tcp are for amp:// and amps:// agent URLs")
	}
	if c.Bool("unsafe-plain-http") && u.Scheme != "http" {
		return "", nil, cliutil.Usagef("--unsafe-plain-http is for http:// agent URLs")
	}
	if u.Scheme == "http" && !c.Bool("unsafe-plain-http") && !ampstcp.LoopbackHost(u.Hostname()) {
		// As amp:// (tcpTransport): the params, the result and any
		// unsigned refusal would cross the network in clear, and anyone on
		// the path could answer with unsigned refusals.
		return "", nil, cliutil.WithHint(cliutil.Failf(errUnsafePlainHTTP, "plain http:// would cross the network unencrypted: the agent is not on a loopback address"),
			"use https://, an agent on 127.0.0.1, or say --unsafe-plain-http")
	}
	return base, u, nil
}

// checkPeerDID refuses a --to that is not a bare DID, or a did:key whose
// keys do not decode, before anything is sent to an agent that could
// never answer as it.
func checkPeerDID(peer string) error {
	switch {
	case !amp.ValidDID(peer):
		return cliutil.WithHint(cliutil.Usagef("--to %s is not a DID (did:METHOD:ID)", cliutil.Sanitize(peer)),
			"give the agent's DID as 'ampagent key show --did AGENT_KEY' prints it (did:key:z6Mk...)")
	case amp.BareDID(peer) != peer:
		return cliutil.Usagef("--to must be a DID without a fragment (no #...)")
	case strings.HasPrefix(peer, "did:key:"):
		// A did:key carries its keys: one that does not decode is
		// refused here.
		if _, err := amp.DIDKeyDocument(peer); err != nil {
			return cliutil.WithHint(cliutil.Usagef("--to %s is not a valid did:key: %s", cliutil.Sanitize(peer), amp.SafeMessage(err)),
				"give the agent's DID as 'ampagent key show --did AGENT_KEY' prints it (did:key:z6Mk...)")
		}
	}
	return nil
}

// peerDIDs is how the provider's replies are verified: a did:key carries
// its own keys (nil: the client resolves it), any other DID needs its
// document (--to-doc), whose id must be --to.
func peerDIDs(c *cli.Context, peer string) (amp.DIDResolver, error) {
	isKey := strings.HasPrefix(peer, "did:key:")
	switch {
	case isKey && c.IsSet("to-doc"):
		return nil, cliutil.Usagef("--to-doc is for a provider that is not a did:key: a did:key carries its own keys")
	case !isKey && !c.IsSet("to-doc"):
		return nil, cliutil.WithHint(cliutil.Usagef("the provider is not a did:key: its replies cannot be verified without its did document"),
			"give --to-doc FILE, the provider's DID document")
	case isKey:
		return nil, nil
	}
	data, err := cliutil.ReadFile(c.String("to-doc"), maxDIDDocFile, "provider's did document")
	if err != nil {
		return nil, err
	}
	doc, err := amp.ParseDIDDocument(data)
	if err != nil {
		return nil, err
	}
	if doc.ID != peer {
		return nil, cliutil.Usagef("the document in --to-doc is not the one of --to (its id differs)")
	}
	return staticDIDs{doc}, nil
}

// keyShowHint tells how to get the DID --to wants.
const keyShowHint = "--to must be the DID of the agent at the URL: 'ampagent key show --did AGENT_KEY' prints it"

// explain makes a failed call's error say who answered, when the answer
// shows that --to names another agent than the one at the URL:
//
//   - a reply signed by another agent (client.ErrWrongSender): its
//     verified DID is named, and --to is hinted at;
//   - an encrypted request refused by an unsigned refusal that claims
//     3001 (the answer of an agent that cannot decrypt: it names no one;
//     the claim only starts the check, which trusts a signed PONG alone):
//     the agent at the URL is
//     asked who it is, with one plain PING, and its verified DID named
//     when it is not --to (when it is, the refusal is --to's own and is
//     returned as it is).
//
// Any other error is returned as it is.
func (s *session) explain(err error) error {
	var ae *amp.Error
	if !errors.As(err, &ae) {
		return err
	}
	switch {
	case ae.Name == client.ErrWrongSender:
		if ws, ok := ae.Details.(client.WrongSender); ok {
			return cliutil.WithHint(amp.Named(ae.Code, ae.Name, "the agent that answered is %s, not --to %s (its signature verified)", ws.From, ws.Provider).WithDetails(ws),
				keyShowHint)
		}
		return cliutil.WithHint(err, keyShowHint)
	case ae.Name == transport.ErrUnsignedRefusal && claimedCode(ae) == amp.CodeUnauthorized && s.cfg.Encrypt:
		// An agent that cannot decrypt answers 3001 unsigned (over HTTP,
		// an error body: it cannot tell whom to sign for), which names no
		// one; an authorization refusal is 3001 too, from --to itself.
		who := s.whoAnswers()
		if who == "" || who == s.peer {
			return err
		}
		// 3001 is now the CLI's own finding (another agent, verified by
		// its PONG, cannot decrypt for --to), no longer the unsigned claim.
		return cliutil.WithHint(amp.NewError(amp.CodeUnauthorized, "the agent that answered is %s, not --to %s: it cannot decrypt a message sealed for --to's key (its identity verified by a signed PONG)", who, s.peer).
			WithDetails(client.WrongSender{From: who, Provider: s.peer}).WithCause(err), keyShowHint)
	}
	return err
}

// claimedCode is the code an unsigned refusal claims (0 for none).
func claimedCode(e *amp.Error) amp.Code {
	if u, ok := e.Details.(transport.UnsignedRefusal); ok {
		return amp.Code(u.ClaimedCode)
	}
	return 0
}

// whoAnswers asks the agent at the session's URL who it is: one PING, not
// encrypted and not retried, whose PONG is verified against the keys of
// the DID that signed it. It returns that DID, s.peer when the PONG is
// from --to, or "" when no verified answer came.
func (s *session) whoAnswers() string {
	cfg := s.cfg
	cfg.Encrypt = false
	cfg.Retry = client.Retry{MaxAttempts: 1, Base: cliRetryBase, Max: cliRetryMax}
	cl, err := client.New(cfg)
	if err != nil {
		return ""
	}
	err = cl.Ping(s.ctx)
	if err == nil {
		return s.peer
	}
	var ae *amp.Error
	if errors.As(err, &ae) && ae.Name == client.ErrWrongSender {
		if ws, ok := ae.Details.(client.WrongSender); ok && amp.ValidDID(ws.From) {
			return ws.From
		}
	}
	return ""
}

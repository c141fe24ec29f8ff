package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/internal/cliutil"
	"github.com/ampbundle/ampbundle/transport/ampstcp"
)

// The AMPS/TCP binding in the CLI (docs/TRANSPORT.md).

// tcpServeFlags are serve's flags for the TCP listener.
func tcpServeFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "listen-tcp", Usage: "also serve the AMPS/TCP binding on `ADDR`, e.g. 127.0.0.1:7443"},
		&cli.StringFlag{Name: "tls-cert", Usage: "TLS certificate chain `FILE` (PEM) for --listen-tcp (amps://)"},
		&cli.StringFlag{Name: "tls-key", Usage: "TLS private key `FILE` (PEM) for --tls-cert"},
		&cli.IntFlag{Name: "tcp-max-in-flight", Usage: "most messages the --listen-tcp listener handles at once, all connections together, `N` (default 512); beyond it connections are not read (back-pressure)"},
		&cli.IntFlag{Name: "tcp-handshake-rate", Usage: fmt.Sprintf("most TLS handshakes the --listen-tcp listener (amps://) begins a second for one address (an IPv6 /48), `N` from 1 to %d (default 16); one address may first open its whole share of --max-conns at once, and a connection beyond the rate is closed before its handshake", maxTCPHandshakeRate)},
	}
}

// tcpClientFlags are query's and invoke's flags for amp:// and amps://.
func tcpClientFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "tls-ca", Usage: "trust the CA certificates in `FILE` (PEM) for an amps:// agent (default: the system roots)"},
		&cli.BoolFlag{Name: "unsafe-plain-tcp", Usage: "allow amp:// (no TLS) to an agent that is not on a loopback address"},
	}
}

// tcpTLS reads the certificate and key of --listen-tcp (checked by
// serveConfig.Validate), when given; it only reads, so serve calls it
// before it opens anything.
func tcpTLS(sc *serveConfig) (*tls.Config, error) {
	if sc.listenTCP == "" || sc.tlsCert == "" {
		return nil, nil
	}
	return cliutil.ServerTLSNamed(sc.tlsCert, sc.tlsKey, "--tls-cert file", "--tls-key file")
}

// tcpListener opens the listener of --listen-tcp: TLS with cfg (tcpTLS),
// plain when cfg is nil. It returns nil when --listen-tcp is not given.
func tcpListener(sc *serveConfig, cfg *tls.Config) (net.Listener, string, error) {
	addr := sc.listenTCP
	if addr == "" {
		return nil, "", nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, "", cliutil.Failf("listen_failed", "cannot listen on the tcp address").WithCause(err)
	}
	url := "amp://" + ln.Addr().String()
	if cfg != nil {
		ln = tls.NewListener(ln, cfg)
		url = "amps://" + ln.Addr().String()
	}
	return ln, url, nil
}

// startTCP serves a on ln and returns the function that drains it
// (GOAWAY, then in-flight messages finish). opts carry the HTTP listener's
// limits (--max-in-flight-bytes, --max-conns, --peer-share): the TCP
// listener holds as much at most.
func startTCP(ln net.Listener, a ampstcp.Handler, opts ampstcp.ServerOptions, errs chan<- error) func(context.Context) error {
	srv := ampstcp.NewServer(a, opts)
	go func() { errs <- srv.Serve(ln) }()
	return srv.Shutdown
}

// tcpTransport builds the client transport for an amp:// or amps:// URL.
func tcpTransport(c *cli.Context, rawURL, did string) (*ampstcp.Transport, error) {
	opts := ampstcp.ClientOptions{AllowPlainRemote: c.Bool("unsafe-plain-tcp"), DID: did, DialTimeout: 10 * time.Second}
	if c.IsSet("tls-ca") {
		cfg, err := cliutil.ClientTLS(c.String("tls-ca"))
		if err != nil {
			return nil, err
		}
		opts.TLS = cfg
	}
	tr, err := ampstcp.NewTransport(rawURL, opts)
	switch {
	case err == nil:
		return tr, nil
	case amp.NameOf(err) == "plain_remote":
		return nil, cliutil.WithHint(cliutil.Failf("unsafe_plain_tcp", "plain amp:// would cross the network unencrypted: the agent is not on a loopback address"),
			"use amps:// (tls), an agent on 127.0.0.1, or say --unsafe-plain-tcp")
	}
	return nil, cliutil.WithHint(cliutil.Usagef("the agent URL must be amp://HOST:PORT or amps://HOST:PORT"), "for example amps://agents.example.org:7443")
}

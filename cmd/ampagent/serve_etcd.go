package main

import (
	"crypto/tls"
	"log/slog"
	"net"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/ampbundle/ampbundle/agent/ledger"
	"github.com/ampbundle/ampbundle/agent/ledger/etcdledger"
	"github.com/ampbundle/ampbundle/internal/cliutil"
)

// etcdFlags are serve's flags of the idempotency ledger on etcd
// (--ledger etcd://HOST:PORT[,HOST:PORT…][/PREFIX]; docs/FLEET.md).
func etcdFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "etcd-ca", Usage: "CA certificate `FILE` (PEM) that signs the etcd members' certificates (--ledger etcd://…)"},
		&cli.StringFlag{Name: "etcd-cert", Usage: "client certificate `FILE` (PEM) for etcd, mutual TLS (with --etcd-key)"},
		&cli.StringFlag{Name: "etcd-key", Usage: "client key `FILE` (PEM) for etcd, mutual TLS (with --etcd-cert)"},
	}
}

// openEtcdLedger opens the ledger on etcd when cfg.Ledger is an etcd://
// URL (nil, "", nil otherwise; its flags were checked by validateEtcd):
// its calls are observed by met, and ready reports whether it answers.
func openEtcdLedger(c *cli.Context, cfg *serveConfig, now func() time.Time, log *slog.Logger, ready *readiness, met *metrics) (ledger.Store, string, error) {
	if !strings.HasPrefix(cfg.Ledger, "etcd://") {
		return nil, "", nil
	}
	endpoints, prefix, err := etcdledger.ParseURL(cfg.Ledger)
	if err != nil {
		return nil, "", cliutil.Usagef("%s", err.Error())
	}
	tlsCfg, err := etcdTLS(c.String("etcd-ca"), c.String("etcd-cert"), c.String("etcd-key"))
	if err != nil {
		return nil, "", err
	}
	s, err := etcdledger.Open(etcdledger.Options{Endpoints: endpoints, Prefix: prefix, TLS: tlsCfg, Now: now,
		Limits:  ledger.Limits{Budget: cfg.LedgerBudgetBytes, PerCaller: cfg.LedgerCallerBytes, ReplyReserve: cfg.MaxResultBytes},
		Observe: met.observeLedger})
	if err != nil {
		return nil, "", err
	}
	ready.ledger = s.Ready
	if err := s.Ready(); err != nil {
		log.Warn("the etcd ledger does not answer yet; invocations are refused (5002, retryable) until it does", "endpoints", len(endpoints))
	}
	return s, "etcd", nil
}

// validateEtcd checks the etcd flags before anything is opened: they go
// with an etcd:// ledger, whose URL parses, and an etcd off this host is
// reached over TLS only.
func (sc *serveConfig) validateEtcd() error {
	given := map[string]bool{"etcd-ca": sc.etcdCA != "", "etcd-cert": sc.etcdCert != "", "etcd-key": sc.etcdKey != ""}
	if !strings.HasPrefix(sc.Ledger, "etcd://") {
		for _, f := range []string{"etcd-ca", "etcd-cert", "etcd-key"} {
			if given[f] {
				return cliutil.Usagef("--%s needs --ledger etcd://…", f)
			}
		}
		return nil
	}
	endpoints, _, err := etcdledger.ParseURL(sc.Ledger)
	if err != nil {
		return cliutil.Usagef("%s", err.Error())
	}
	if (sc.etcdCert == "") != (sc.etcdKey == "") {
		return cliutil.Usagef("--etcd-cert and --etcd-key go together")
	}
	if sc.etcdCA == "" && sc.etcdCert == "" && !allLoopback(endpoints) {
		return cliutil.Usagef("an etcd ledger off this host needs TLS: give --etcd-ca (and --etcd-cert, --etcd-key for mutual TLS)")
	}
	return nil
}

// allLoopback reports whether every endpoint is a loopback address.
func allLoopback(endpoints []string) bool {
	for _, e := range endpoints {
		host, _, _ := net.SplitHostPort(e)
		ip := net.ParseIP(host)
		if host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			return false
		}
	}
	return true
}

// etcdTLS is the client TLS of --etcd-ca, --etcd-cert and --etcd-key (nil
// when none is given), read as --listen-tcp's and --tls-ca's files are
// (cliutil.ClientTLSNamed, cliutil.ServerTLSNamed: 1 MiB a file,
// tls_config for a file that does not load; CLI-43), each error naming
// the flag whose file it is, never what the file holds (CLI-50).
func etcdTLS(ca, cert, key string) (*tls.Config, error) {
	if ca == "" && cert == "" && key == "" {
		return nil, nil
	}
	if (cert == "") != (key == "") {
		return nil, cliutil.Usagef("--etcd-cert and --etcd-key go together")
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if ca != "" {
		roots, err := cliutil.ClientTLSNamed(ca, "--etcd-ca file")
		if err != nil {
			return nil, err
		}
		cfg.RootCAs = roots.RootCAs
	}
	if cert != "" {
		pair, err := cliutil.ServerTLSNamed(cert, key, "--etcd-cert file", "--etcd-key file")
		if err != nil {
			return nil, err
		}
		cfg.Certificates = pair.Certificates
	}
	return cfg, nil
}

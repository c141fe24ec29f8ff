package mcpbridge

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ampbundle/ampbundle/agent"
)

// clientCert makes a CA and a client certificate it signs, naming uri.
func clientCert(t *testing.T, uri string) (*x509.CertPool, tls.Certificate) {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test ca"}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	u, _ := url.Parse(uri)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "client"}, URIs: []*url.URL{u},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, KeyUsage: x509.KeyUsageDigitalSignature,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	return pool, tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// TestClientCertificateNamesItsPrincipal: with mutual TLS, the verified
// certificate's DID is the caller, and its allow rules apply: the
// certified DID sees the tool, a certificate naming another DID sees none
// (threat: a certificate accepted as "someone", not as the one it names).
func TestClientCertificateNamesItsPrincipal(t *testing.T) {
	const certified = "did:web:cert-user.example.org"
	e := newEnv(t, newStoreFile(t), agent.Rules{{Caller: certified, Prefix: "org.example."}})
	for _, c := range []struct {
		uri   string
		tools int
	}{{certified, 1}, {"did:web:someone-else.example.org", 0}} {
		pool, cert := clientCert(t, c.uri)
		srv := httptest.NewUnstartedServer(e.bridge.HTTPHandler(HTTPOptions{ClientCerts: true}))
		srv.TLS = &tls.Config{ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert}
		srv.StartTLS()
		hc := srv.Client()
		hc.Transport.(*http.Transport).TLSClientConfig.Certificates = []tls.Certificate{cert}
		ctx := context.Background()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "mtls", Version: "1"}, nil).Connect(ctx,
			&mcp.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: hc, DisableStandaloneSSE: true}, nil)
		if err != nil {
			t.Fatal(err)
		}
		res, err := cs.ListTools(ctx, nil)
		if err != nil || len(res.Tools) != c.tools {
			t.Fatalf("%s: %v %d tools, want %d", c.uri, err, len(res.Tools), c.tools)
		}
		cs.Close()
		srv.Close()
	}
}

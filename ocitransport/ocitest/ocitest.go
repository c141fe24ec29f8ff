package ocitest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// Setup names the script that installs what this package needs.
const Setup = "scripts/ci-oci.sh"

// Config says how the registry is started.
type Config struct {
	TLS  bool // serve HTTPS with a certificate of a CA generated for the test
	Auth bool // require basic auth (User, Password)
}

// Registry is a running registry.
type Registry struct {
	// Host is 127.0.0.1:PORT.
	Host string
	// CAFile is the PEM of the CA (TLS only).
	CAFile string
	// CAPool holds the CA (TLS only).
	CAPool *x509.CertPool
	// User and Password are the basic auth credentials (Auth only).
	User, Password string
	// DockerConfig is a Docker config.json holding the credentials (Auth
	// only; an empty configuration otherwise).
	DockerConfig string
	// Root is the registry's storage folder.
	Root string
}

// RegistryBinary returns the registry program, failing t when it is missing.
func RegistryBinary(t testing.TB) string {
	t.Helper()
	if p, err := exec.LookPath("docker-registry"); err == nil {
		return p
	}
	t.Fatalf("the CNCF distribution registry (docker-registry) is not installed: run %s", Setup)
	return ""
}

// Crane returns the crane program, failing t when it is missing: in PATH,
// or where scripts/ci-oci.sh installs it ($AMPBUNDLE_OCI_TOOLS, else the
// user cache folder's ampbundle-ci/bin).
func Crane(t testing.TB) string {
	t.Helper()
	if p, err := exec.LookPath("crane"); err == nil {
		return p
	}
	for _, d := range toolDirs() {
		p := filepath.Join(d, "crane")
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			return p
		}
	}
	t.Fatalf("crane (go-containerregistry v0.22.1) is not installed: run %s", Setup)
	return ""
}

func toolDirs() []string {
	var out []string
	if d := os.Getenv("AMPBUNDLE_OCI_TOOLS"); d != "" {
		out = append(out, d)
	}
	if c, err := os.UserCacheDir(); err == nil {
		out = append(out, filepath.Join(c, "ampbundle-ci", "bin"))
	}
	return out
}

// freePort returns a loopback port free a moment ago.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Start starts a registry for t, stopped when t ends.
func Start(t testing.TB, c Config) *Registry {
	t.Helper()
	bin := RegistryBinary(t)
	dir := t.TempDir()
	r := &Registry{Root: filepath.Join(dir, "data"), Host: fmt.Sprintf("127.0.0.1:%d", freePort(t))}
	cfg := fmt.Sprintf("version: 0.1\nlog:\n  level: error\n  accesslog:\n    disabled: true\nstorage:\n  filesystem:\n    rootdirectory: %s\n  delete:\n    enabled: true\nhttp:\n  addr: %s\n", r.Root, r.Host)
	if c.TLS {
		cert, key := r.makeTLS(t, dir)
		cfg += fmt.Sprintf("  tls:\n    certificate: %s\n    key: %s\n", cert, key)
	}
	auths := map[string]any{}
	if c.Auth {
		r.User, r.Password = "ci-user", "ci-password-"+fmt.Sprint(time.Now().UnixNano())
		hash, err := bcrypt.GenerateFromPassword([]byte(r.Password), bcrypt.MinCost)
		if err != nil {
			t.Fatal(err)
		}
		htp := filepath.Join(dir, "htpasswd")
		writeFile(t, htp, r.User+":"+string(hash)+"\n")
		cfg += fmt.Sprintf("auth:\n  htpasswd:\n    realm: ampbundle-test\n    path: %s\n", htp)
		auths[r.Host] = map[string]string{"auth": base64.StdEncoding.EncodeToString([]byte(r.User + ":" + r.Password))}
	}
	conf, _ := json.Marshal(map[string]any{"auths": auths})
	r.DockerConfig = filepath.Join(dir, "docker-config.json")
	writeFile(t, r.DockerConfig, string(conf))
	cfgFile := filepath.Join(dir, "config.yml")
	writeFile(t, cfgFile, cfg)
	cmd := exec.Command(bin, "serve", cfgFile)
	logf, err := os.Create(filepath.Join(dir, "registry.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatalf("cannot start the registry (%s): %v", Setup, err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		logf.Close()
	})
	r.waitReady(t, c, filepath.Join(dir, "registry.log"))
	return r
}

func (r *Registry) waitReady(t testing.TB, c Config, log string) {
	t.Helper()
	client := &http.Client{Timeout: time.Second}
	scheme := "http"
	if c.TLS {
		scheme = "https"
		client.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: r.CAPool}}
	}
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := client.Get(scheme + "://" + r.Host + "/v2/")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusUnauthorized {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	data, _ := os.ReadFile(log)
	t.Fatalf("the registry did not answer on %s within 15 s: %s", r.Host, data)
}

func (r *Registry) makeTLS(t testing.TB, dir string) (certFile, keyFile string) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ampbundle test CA"}, NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"}, NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"}, KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, leaf, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	r.CAFile = filepath.Join(dir, "ca.pem")
	writeFile(t, r.CAFile, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})))
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	writeFile(t, certFile, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})))
	writeFile(t, keyFile, string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})))
	r.CAPool = x509.NewCertPool()
	r.CAPool.AddCert(caCert)
	return certFile, keyFile
}

func writeFile(t testing.TB, p, data string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

// RunCrane runs crane with args (plain HTTP to a loopback registry:
// --insecure) and returns its stdout, failing t on an error.
func RunCrane(t testing.TB, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(Crane(t), append(args, "--insecure")...)
	cmd.Env = append(os.Environ(), "DOCKER_CONFIG="+t.TempDir())
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("crane %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	return out
}

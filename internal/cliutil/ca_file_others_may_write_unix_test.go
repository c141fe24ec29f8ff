//go:build unix

package cliutil

import (
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
)

// kubeLayout lays out dir as a Kubernetes secret or config map volume
// mounts one: the file lies in a timestamped folder, "..data" links to
// that folder and name links to "..data/name" (the kubelet's atomic
// writer). It returns the path the pod is given, dir/name, and the file
// the links lead to.
func kubeLayout(t *testing.T, dir, name string, data []byte, mode os.FileMode) (path, file string) {
	t.Helper()
	ts := filepath.Join(dir, "..2026_01_01_00_00_00.000000001")
	if err := os.Mkdir(ts, 0o755); err != nil {
		t.Fatal(err)
	}
	file = writeMode(t, ts, name, data, mode)
	if err := os.Symlink(filepath.Base(ts), filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	path = filepath.Join(dir, name)
	if err := os.Symlink(filepath.Join("..data", name), path); err != nil {
		t.Fatal(err)
	}
	return path, file
}

// caRefusal checks that err refuses a CA file as want (tls_config for
// ClientTLS), the message naming the flag and holding why, neither the
// path nor the file's contents, with a hint to chown or chmod go-w.
func caRefusal(t *testing.T, cfg *tls.Config, err error, want amp.ErrName, why, dir string) {
	t.Helper()
	if amp.NameOf(err) != want || cfg != nil {
		t.Fatalf("got %v, %v; want %s: another user chooses which servers are trusted", cfg, err, want)
	}
	msg := err.Error()
	if !strings.Contains(msg, "--etcd-ca file") || !strings.Contains(msg, why) ||
		strings.Contains(msg, dir) || strings.Contains(msg, "CERTIFICATE") {
		t.Fatalf("message %q: want the flag and %q, neither the path nor the contents", msg, why)
	}
	var h hinted
	if !errors.As(err, &h) || !strings.Contains(h.hint, "chmod go-w") || !strings.Contains(h.hint, "chown") {
		t.Fatalf("hint of %v: want chown and chmod go-w", err)
	}
}

// TestCAFileAnotherUserMayWriteIsRefused
//
// Attack (a local user in the file's group, or any local user): a CA
// file is a trust anchor. ClientTLS and ClientTLSNamed (ampagent's
// --tls-ca and --etcd-ca, ampbundle sync's and the OCI commands'
// --tls-ca) read it with ReadFile, which judges neither owner nor mode,
// while the agent's config file is refused when group or others may
// write it (CLI-54). A CA file of mode 0664, 0620 or 0646 was loaded
// without a word: whoever could write it added a CA of theirs and the
// tool trusted their server (a mirror, a registry, an agent, etcd), so
// served them the bundles, the ledger or the calls it meant for another.
// Now the file opened is judged before a certificate is parsed:
// tls_config, naming the flag, with a hint (chown, chmod go-w). Files
// only their owner may write load: 0644, 0600, 0444, and the layout a
// Kubernetes secret or config map volume mounts (0644 through the
// ..data links), whose links (mode 0777) are not what is judged.
func TestCAFileAnotherUserMayWriteIsRefused(t *testing.T) {
	certPEM, _ := tlsPair(t)
	tests := []struct {
		name string
		mode os.FileMode
		kube bool // reached through a Kubernetes volume's ..data links
		why  string
	}{
		{"readable by all, writable by its owner", 0o644, false, ""},
		{"owner-only", 0o600, false, ""},
		{"read-only for all", 0o444, false, ""},
		{"a Kubernetes volume's default mode, through ..data links", 0o644, true, ""},
		{"writable by the group", 0o664, false, "mode 0664"},
		{"writable by the group, unreadable by others", 0o620, false, "mode 0620"},
		{"writable by others", 0o646, false, "mode 0646"},
		{"writable by all", 0o666, false, "mode 0666"},
		{"a Kubernetes volume with defaultMode 0666", 0o666, true, "mode 0666"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := writeMode(t, dir, "ca.pem", certPEM, tt.mode)
			if tt.kube {
				path, _ = kubeLayout(t, dir, "ca.crt", certPEM, tt.mode)
			}
			cfg, err := ClientTLSNamed(path, "--etcd-ca file")
			if tt.why == "" {
				if err != nil || cfg == nil || cfg.RootCAs == nil {
					t.Fatalf("got %v, %v; want the CA loaded", cfg, err)
				}
				return
			}
			caRefusal(t, cfg, err, "tls_config", tt.why, dir)
			if cfg, err := ClientTLS(path); amp.NameOf(err) != "tls_config" || cfg != nil {
				t.Fatalf("ClientTLS: got %v, %v; want tls_config", cfg, err)
			}
		})
	}
}

// TestCAFileOfAnotherUserIsRefused: a CA file another user owns (here
// uid 65534), whatever its mode, is that user's to rewrite or chmod: it
// was loaded, so that user chose the servers trusted. It is refused
// (tls_config, the uid named), given directly or through a link of this
// user's (the file opened is judged, not the link). A file root owns
// whose group is another (a Kubernetes fsGroup: root:GID, mode 0644,
// through the ..data links) still loads; one that group may write does
// not. Root alone can give a file away: elsewhere the test is skipped.
func TestCAFileOfAnotherUserIsRefused(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give a file to another user")
	}
	certPEM, _ := tlsPair(t)
	tests := []struct {
		name     string
		uid, gid int
		mode     os.FileMode
		link     bool // given as a link of this user's to the file
		kube     bool
		why      string
	}{
		{"another user's, read-only for all", 65534, 65534, 0o444, false, false, "uid 65534"},
		{"another user's, owner-only", 65534, 65534, 0o600, false, false, "uid 65534"},
		{"another user's, through a link of this user's", 65534, 65534, 0o644, true, false, "uid 65534"},
		{"another user's, in a Kubernetes volume's layout", 65534, 65534, 0o644, false, true, "uid 65534"},
		{"root's, a Kubernetes fsGroup's, mode 0644", 0, 65534, 0o644, false, true, ""},
		{"root's, a Kubernetes fsGroup's, mode 0664", 0, 65534, 0o664, false, true, "mode 0664"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := writeMode(t, dir, "ca.pem", certPEM, tt.mode)
			file := path
			if tt.kube {
				path, file = kubeLayout(t, dir, "ca.crt", certPEM, tt.mode)
			}
			if err := os.Chown(file, tt.uid, tt.gid); err != nil {
				t.Skipf("cannot give the file away: %v", err)
			}
			if tt.link {
				path = filepath.Join(dir, "link.pem")
				if err := os.Symlink(file, path); err != nil {
					t.Fatal(err)
				}
			}
			cfg, err := ClientTLSNamed(path, "--etcd-ca file")
			if tt.why == "" {
				if err != nil || cfg == nil || cfg.RootCAs == nil {
					t.Fatalf("got %v, %v; want the CA loaded", cfg, err)
				}
				return
			}
			caRefusal(t, cfg, err, "tls_config", tt.why, dir)
		})
	}
}

// TestCAFileGivenAsAPipeIsStillRead: a process substitution (--tls-ca
// <(…)) is a pipe of this user, mode 0600: it is judged as a file is
// (fstat of what was opened) and read as CLI-57 reads a pipe.
func TestCAFileGivenAsAPipeIsStillRead(t *testing.T) {
	certPEM, _ := tlsPair(t)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	go func() {
		w.Write(certPEM)
		w.Close()
	}()
	path := fmt.Sprintf("/dev/fd/%d", r.Fd())
	if _, err := os.Stat(path); err != nil {
		t.Skipf("no /dev/fd here: %v", err)
	}
	if cfg, err := ClientTLS(path); err != nil || cfg == nil || cfg.RootCAs == nil {
		t.Fatalf("got %v, %v; want the CA loaded from the pipe", cfg, err)
	}
}
